package mcpserver

import (
	"encoding/json"
	"strings"
	"testing"
)

// FuzzDecodeArgs: whatever a model sends as a tool's arguments, decoding
// never panics, an error names the tool and what it takes, and accepted
// arguments hold only known keys.
func FuzzDecodeArgs(f *testing.F) {
	for _, s := range []string{``, `{}`, `null`, `[]`, `{"run_id":"r","wait_seconds":3}`, `{"runid":1}`,
		`{"run_id":"r","output":"x","wait_seconds":-1}`, `{"run_id":{"a":1}}`, `{"run_id":"r"} {}`, `"x"`, `{"wait_seconds":1e99}`} {
		f.Add(s)
	}
	schema := schemaFor[seqStatusIn]()
	f.Fuzz(func(t *testing.T, raw string) {
		var in seqStatusIn
		err := decodeArgs("seq_status", json.RawMessage(raw), schema, &in)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "seq_status: bad arguments") || !strings.Contains(err.Error(), "seq_status takes: output, run_id (required), wait_seconds") {
				t.Fatalf("decodeArgs(%q) error %q does not name the tool and its arguments", raw, err)
			}
			return
		}
		var fields map[string]json.RawMessage
		if json.Unmarshal([]byte(raw), &fields) != nil {
			t.Fatalf("decodeArgs accepted %q, which is not a JSON object", raw)
		}
		for k := range fields {
			if _, ok := schema.Properties[k]; !ok {
				t.Fatalf("decodeArgs accepted the unknown argument %q in %q", k, raw)
			}
		}
		if _, ok := fields["run_id"]; !ok {
			t.Fatalf("decodeArgs accepted %q without run_id", raw)
		}
	})
}
