package builtin

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
)

// TestSchemaExamples: every example in the built-in tools' argument
// descriptions — which `mcp serve` shows a model as the bridged tools'
// schemas — works when called: the include glob finds files, the timeout
// is taken. A description with an example this test has no rule for
// fails, so a new one gets checked too (as TestDescriptionExamples does
// for the MCP server's own tools).
func TestSchemaExamples(t *testing.T) {
	root, _ := project(t)
	p := newProvider(t, Config{Root: root, AllowCommands: []string{"ls"}})
	marker := regexp.MustCompile(`(?i)e\.g\.|example|such as|"`)
	after := func(desc, word string) string {
		_, rest, _ := strings.Cut(desc, word)
		return strings.TrimSpace(strings.FieldsFunc(rest, func(r rune) bool { return r == ',' || r == ';' || r == ')' })[0])
	}
	checked := 0
	for _, tl := range p.Tools() {
		var schema struct {
			Properties map[string]struct {
				Description string `json:"description"`
			} `json:"properties"`
		}
		if err := json.Unmarshal(tl.Schema, &schema); err != nil {
			t.Fatalf("%s: schema: %v", tl.Name, err)
		}
		if marker.MatchString(tl.Description) {
			t.Errorf("%s: the description %q holds an example this test has no rule for", tl.Name, tl.Description)
		}
		for name, prop := range schema.Properties {
			if !marker.MatchString(prop.Description) {
				continue
			}
			var args string
			switch name {
			case "include":
				args = fmt.Sprintf(`{"pattern":"TODO","include":%q}`, after(prop.Description, "e.g."))
			case "timeout":
				args = fmt.Sprintf(`{"command":"ls","timeout":%q}`, after(prop.Description, "such as"))
			default:
				t.Errorf("%s.%s: the description %q holds an example this test has no rule for: add one", tl.Name, name, prop.Description)
				continue
			}
			checked++
			res, code, err := call(t, p, tl.Name, args)
			if err != nil {
				t.Errorf("%s %s (the example of %s) = code %q, %v; want it to work", tl.Name, args, name, code, err)
			} else if name == "include" && !strings.Contains(string(res), "main.go") {
				t.Errorf("%s %s (the example of %s) = %s; want main.go's TODO found", tl.Name, args, name, res)
			}
		}
	}
	if checked < 2 {
		t.Errorf("%d examples checked; want fs.grep's include and cmd.run's timeout at least", checked)
	}
}
