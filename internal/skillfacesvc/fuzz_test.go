package skillfacesvc

import (
	"strings"
	"testing"

	"github.com/skillbus/skillbus/pkg/skillface"
)

// FuzzDecodeRequest: any request body decodes or fails with a 400 whose
// message names no Go type and says what a request holds.
func FuzzDecodeRequest(f *testing.F) {
	for _, s := range []string{
		`{"session_id":"s","round":1,"messages":[{"role":"user","content":"hi"}]}`,
		`{"restricted":true,"messages":[]}`,
		`{"session_id":"s","round":"1"}`,
		`{"session_id":"s","round":1.5}`,
		`{"messages":[{"role":"user","content":"x","name":"n"}]}`,
		`{"tools":{"a":1}}`,
		`[]`, `null`, `"x"`, `{`, `{} {}`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var req skillface.Request
		err := decodeStrict(data, &req, assembleFields)
		if err == nil {
			return
		}
		re, ok := err.(*replyError)
		if !ok || re.code != CodeBadRequest {
			t.Fatalf("decodeStrict(%q) = %v; want a 400 reply error", data, err)
		}
		for _, leak := range []string{"json:", "skillface.", "int64", "[]string", "main.", "*"} {
			if strings.Contains(re.msg, leak) && !strings.Contains(string(data), leak) {
				t.Fatalf("decodeStrict(%q) message %q contains %q", data, re.msg, leak)
			}
		}
	})
}
