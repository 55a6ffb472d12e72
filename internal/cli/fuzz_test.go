package cli

import (
	"encoding/json"
	"testing"
	"unicode/utf8"

	"github.com/skillbus/skillbus/pkg/seq"
)

// FuzzArgValue checks --arg parsing: it never panics, a string value is
// kept exactly, and any accepted value is valid JSON.
func FuzzArgValue(f *testing.F) {
	for _, s := range []string{"", ".", "10", "2.5", "true", "null", `{"a":1}`, `["x"]`, "a=b", "\xff", "1e999", "[1,"} {
		f.Add(s)
	}
	types := []seq.Type{"string", "bool", "integer", "number", "object", "array", "array<string>"}
	f.Fuzz(func(t *testing.T, v string) {
		for _, typ := range types {
			raw, err := argValue(typ, v)
			if err != nil {
				continue
			}
			if !json.Valid(raw) {
				t.Fatalf("argValue(%s, %q) = %s; not JSON", typ, v, raw)
			}
			if typ == "string" {
				var s string
				if json.Unmarshal(raw, &s) != nil || utf8.ValidString(v) && s != v {
					t.Fatalf("argValue(string, %q) = %s; want the value kept", v, raw)
				}
			}
		}
	})
}
