package builtin

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// TestRenderMissingAndNull: a missing key and a JSON null render as empty
// text — printed, nested (.a.b with a missing or null), in if, with and
// range, in printf, print and join — as docs/tools.md says; before,
// text/template printed "<no value>" for them (missingkey=zero gives a nil
// interface{}, which it prints so) and failed on a field of one. A field of
// a list, a number or text is still an error, naming what was written.
func TestRenderMissingAndNull(t *testing.T) {
	p := newProvider(t, Config{Root: t.TempDir()})
	data := `{"n":null,"s":"text","num":7,"m":{"k":null,"v":"x","deep":{"z":1}},"l":[null,1,"b"],"objs":[{"a":1},{"b":2},null]}`
	for _, tc := range []struct {
		name, tmpl, want string
	}{
		{"missing key", `[{{.missing}}]`, `[]`},
		{"null", `[{{.n}}]`, `[]`},
		{"nested missing", `[{{.missing.deeper.still}}]`, `[]`},
		{"field of null", `[{{.n.x}}]`, `[]`},
		{"missing in an object", `[{{.m.nope}}|{{.m.k}}|{{.m.v}}|{{.m.deep.z}}]`, `[||x|1]`},
		{"variable", `{{$m := .m}}[{{$m.nope}}|{{$m.v}}|{{$.missing.x}}|{{$.m.deep.z}}]`, `[|x||1]`},
		{"if", `{{if .missing}}yes{{else}}no{{end}} {{if .n}}yes{{else}}no{{end}} {{if .m.nope.x}}yes{{else}}no{{end}} {{if .m.v}}yes{{end}}`, `no no no yes`},
		{"else if", `{{if .missing}}a{{else if .m.deep.z}}b{{end}}`, `b`},
		{"with", `{{with .missing.x}}yes{{else}}no{{end}} {{with .m.deep}}{{.z}}{{end}}`, `no 1`},
		{"range over missing and null", `[{{range .missing}}x{{end}}{{range .n}}x{{end}}{{range .m.nope.l}}x{{end}}]`, `[]`},
		{"null elements in range", `{{range .l}}[{{.}}]{{end}}`, `[][1][b]`},
		{"fields of elements in range", `{{range .objs}}[{{.a}}{{.b}}]{{end}}`, `[1][2][]`},
		{"printf", `[{{printf "%v|%s|%d" .missing .n .num}}]`, `[||7]`},
		{"pipeline into printf", `[{{.missing.x | printf "%v"}}]`, `[]`},
		{"print and println", `[{{print .missing "a" .n}}]`, `[a]`},
		{"join", `[{{join "," .l}}]`, `[,1,b]`},
		{"default", `{{default "none" .missing.x}} {{default "none" .n}} {{default "none" .s}}`, `none none text`},
		{"parenthesised", `[{{(.missing.x)}}{{printf "%v" (.m.deep.z)}}]`, `[1]`},
		{"index", `[{{index .m "nope"}}|{{index .m "v"}}]`, `[|x]`},
		{"len", `{{len .missing}} {{len .n}} {{len .s}} {{len .l}} {{len .m}} {{len (keys .m)}}`, `0 0 4 3 3 3`},
		{"eq nil", `{{eq .missing nil}} {{eq .m.nope nil}}`, `true true`},
		{"template call", `{{define "t"}}[{{.x.y}}]{{end}}{{template "t" .missing}}{{template "t" .m}}`, `[][]`},
		{"literal no value is kept", `{{.s}} <no value>`, `text <no value>`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, code, err := call(t, p, "text.render", fmt.Sprintf(`{"template":%q,"data":%s}`, tc.tmpl, data))
			if err != nil {
				t.Fatalf("text.render(%s) = code %s, %v; want %q", tc.tmpl, code, err, tc.want)
			}
			var got string
			if err := json.Unmarshal(res, &got); err != nil || got != tc.want {
				t.Errorf("text.render(%s) = %s (%v); want %q", tc.tmpl, res, err, tc.want)
			}
		})
	}
	// No data at all: every field is missing.
	if res, _, err := call(t, p, "text.render", `{"template":"[{{.}}{{.a.b}}]"}`); err != nil || string(res) != `"[]"` {
		t.Errorf("text.render without data = %s, %v; want \"[]\"", res, err)
	}
	for _, tc := range []struct{ tmpl, want string }{
		{`{{.s.x}}`, `can't read field x of .s: .s is the string "text", not an object`},
		{`{{.l.x}}`, `can't read field x of .l: .l is a list, not an object`},
		{`{{.m.deep.z.w}}`, `can't read field w of .m.deep.z: .m.deep.z is the number 1, not an object`},
		{`{{range .l}}{{.x}}{{end}}`, `can't read field x of the value: the value is the number 1, not an object`},
		{`{{len .m.deep.z}}`, `at <len .m.deep.z>: error calling len: len of the number 1: len takes text, a list or an object`},
	} {
		_, code, err := call(t, p, "text.render", fmt.Sprintf(`{"template":%q,"data":%s}`, tc.tmpl, data))
		if code != "400" || !strings.Contains(fmt.Sprint(err), tc.want) || strings.Contains(fmt.Sprint(err), "_skillbus") {
			t.Errorf("text.render(%s) = code %q, %v; want 400 saying %q, without the rewrite's names", tc.tmpl, code, err, tc.want)
		}
	}
}
