package tool_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/skillbus/skillbus/pkg/tool"
)

// TestTypedDecodesOnce: a Typed tool's function gets its arguments decoded;
// arguments that do not decode (a mistyped or unknown field, data after
// the object) are a CodeBadRequest naming the field in JSON's words.
func TestTypedDecodesOnce(t *testing.T) {
	type args struct {
		Path  string `json:"path"`
		Limit int    `json:"limit,omitempty"`
	}
	var got args
	tl, err := tool.Typed("fs.demo", "A demo.", func(_ context.Context, in args) (map[string]int, error) {
		got = in
		return map[string]int{"n": len(in.Path)}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(tl.Schema), `"path"`) {
		t.Errorf("schema %s lacks the path property", tl.Schema)
	}
	out, err := tl.Func(context.Background(), json.RawMessage(`{"path":"a/b","limit":3}`))
	if err != nil || got != (args{Path: "a/b", Limit: 3}) || out.(map[string]int)["n"] != 3 {
		t.Fatalf("Func = %v, %v with %+v; want n 3 with the decoded arguments", out, err, got)
	}
	for _, tc := range []struct{ args, want string }{
		{`{"path":"a","limit":"3"}`, "limit: got a JSON string, want a whole number"},
		{`{"path":"a","lmit":3}`, `unknown field "lmit"`},
		{`{"path":"a"} {}`, "data after the JSON object"},
	} {
		_, err := tl.Func(context.Background(), json.RawMessage(tc.args))
		var te *tool.Error
		if !errors.As(err, &te) || te.Code != tool.CodeBadRequest || !strings.Contains(te.Description, tc.want) {
			t.Errorf("Func(%s) = %v; want code %s with %q", tc.args, err, tool.CodeBadRequest, tc.want)
		}
	}
}
