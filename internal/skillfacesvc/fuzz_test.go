package skillfacesvc

import (
	"encoding/json"
	"reflect"
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

// FuzzDecodeRequestFast: whenever the fast request decoder accepts a body,
// encoding/json (decodeStrict) accepts it too and gives the same Request.
func FuzzDecodeRequestFast(f *testing.F) {
	for _, s := range []string{
		`{"session_id":"s","round":1,"messages":[{"role":"user","content":"hi"}]}`,
		` { "session_id" : "s" , "round" : -0 , "restricted" : false , "messages" : [ ] , "tools" : [ "a" , "b" ] } `,
		`{"session_id":"\u00e9\n\t\"\\\/\b\f\r","round":9223372036854775807,"work_files":[],"mounts":["m"]}`,
		`{"session_id":"s","round":9223372036854775808}`,
		`{"session_id":"\ud83d\ude00","round":1}`,
		`{"session_id":"é漢字","round":1,"messages":[{"content":"c"},{"role":"r"},{}]}`,
		`{"session_id":"s","Round":1}`,
		`{"session_id":"s","round":1,"round":2}`,
		`{"messages":[{"role":"user","content":"x","role":"system"}]}`,
		`{"session_id":null}`, `{"round":1.0}`, `{"round":1e2}`, `{"round":01}`,
		`{"restricted":true,"messages":[]}`, `{"restricted":truex}`,
		"{\"session_id\":\"\xff\"}", "{\"session_id\":\"a\x01\"}",
		`[]`, `null`, `"x"`, `{`, `{} {}`, ``, `{}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var fast skillface.Request
		if !fastDecodeRequest(data, &fast, nil) {
			return
		}
		var std skillface.Request
		if err := decodeStrict(data, &std, assembleFields); err != nil {
			t.Fatalf("fast decoder accepted %q, encoding/json refused it: %v", data, err)
		}
		if !reflect.DeepEqual(fast, std) {
			t.Fatalf("decoding %q:\nfast          %#v\nencoding/json %#v", data, fast, std)
		}
	})
}

// TestFastDecoderTakesOrdinaryRequests: the requests clients send (as
// encoding/json writes them, or hand-written with spaces and escapes) take
// the fast path; the odd ones are left to encoding/json.
func TestFastDecoderTakesOrdinaryRequests(t *testing.T) {
	full, _ := json.Marshal(skillface.Request{SessionID: "chat-42", Round: 3, Restricted: false,
		Messages:  []skillface.Message{{Role: "system", Content: "You are <b>helpful</b> & \"kind\"\n"}, {Role: "user", Content: "部署 it"}},
		WorkFiles: []string{"a/b.go"}, Tools: []string{"Read"}, Mounts: []string{"pdf"}})
	for _, body := range []string{
		string(full),
		`{"session_id":"s","round":1,"messages":[]}`,
		"{\n  \"session_id\": \"s\",\n  \"round\": 2,\n  \"messages\": [ {\"role\": \"user\", \"content\": \"caf\\u00e9 \\\"q\\\"\"} ]\n}\n",
	} {
		var req skillface.Request
		var seen string
		if !fastDecodeRequest([]byte(body), &req, func(id string) { seen = id }) {
			t.Errorf("fast decoder refused %s", body)
		}
		if seen != req.SessionID || seen == "" {
			t.Errorf("onSession saw %q; want %q", seen, req.SessionID)
		}
	}
	for _, body := range []string{
		`{"Session_ID":"s","round":1}`, `{"session_id":"s","round":1,"extra":1}`, `{"session_id":null}`,
		`{"session_id":"s","round":1.0}`, `{"session_id":"\ud83d\ude00"}`, "{\"session_id\":\"\xff\"}",
	} {
		var req skillface.Request
		if fastDecodeRequest([]byte(body), &req, nil) {
			t.Errorf("fast decoder took %s; it must leave it to encoding/json", body)
		}
	}
}

func TestLeadingSessionID(t *testing.T) {
	for body, want := range map[string]string{
		`{"session_id":"chat-42","round":1}`: "chat-42",
		`{"session_id":"é漢","round":1}`:      "é漢",
		`{"session_id":"","round":1}`:        "",
		`{"round":1,"session_id":"s"}`:       "",
		`{ "session_id":"s"}`:                "",
		`{"session_id":"a\"b"}`:              "",
		"{\"session_id\":\"a\x01\"}":         "",
		"{\"session_id\":\"\xff\"}":          "",
		`{"session_id":"unterminated`:        "",
	} {
		got, ok := leadingSessionID([]byte(body))
		if got != want || ok != (want != "") {
			t.Errorf("leadingSessionID(%q) = %q, %v; want %q", body, got, ok, want)
		}
	}
}
