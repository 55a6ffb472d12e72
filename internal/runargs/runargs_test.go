package runargs

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/skillbus/skillbus/pkg/seq"
)

// The rules are tested through the CLI too (internal/cli/args_test.go);
// these cases pin the exported names the web console uses.
func TestValue(t *testing.T) {
	cases := []struct {
		typ     seq.Type
		in      string
		want    string
		wantErr string
	}{
		{"string", "123", `"123"`, ""},
		{"string", "null", `"null"`, ""},
		{"integer", "007", `7`, ""},
		{"integer", "1e3", `1e3`, ""},
		{"integer", "2.5", "", `give a whole number such as 10, not "2.5"`},
		{"number", "2.5", `2.5`, ""},
		{"bool", "yes", "", "give true or false"},
		{"bool", "null", `null`, ""},
		{"object", `{"a":1}`, `{"a":1}`, ""},
		{"array<string>", `x`, "", "give a JSON array"},
	}
	for _, tc := range cases {
		got, err := Value(tc.typ, tc.in)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("Value(%s, %q) error = %v; want %q", tc.typ, tc.in, err, tc.wantErr)
			}
			continue
		}
		if err != nil || string(got) != tc.want {
			t.Errorf("Value(%s, %q) = %s, %v; want %s", tc.typ, tc.in, got, err, tc.want)
		}
	}
}

func TestCheckJSON(t *testing.T) {
	if err := CheckJSON("array<integer>", json.RawMessage(`[1, 2.5]`)); err == nil || !strings.Contains(err.Error(), "item 2") {
		t.Errorf("CheckJSON(array<integer>, [1, 2.5]) = %v; want an error naming item 2", err)
	}
	if err := CheckJSON("string", json.RawMessage(`null`)); err != nil {
		t.Errorf("null for a string: %v", err)
	}
	if got := SignatureText(map[string]seq.Type{"b": "bool", "a": "string"}); got != "(a: string, b: bool)" {
		t.Errorf("SignatureText = %q", got)
	}
	if got := SignatureText(nil); got != "no arguments" {
		t.Errorf("SignatureText(nil) = %q", got)
	}
}
