package skill

import (
	"errors"
	"strings"
	"testing"

	"github.com/skillbus/skillbus/internal/yamlplain"
	"github.com/skillbus/skillbus/pkg/seq"
)

// TestAliasesRefused: YAML aliases and merge keys are refused in a
// SKILL.md's frontmatter and in a skill.yaml, at their line and with the
// words a sequence file gets for them (one check, internal/yamlplain;
// docs/skills.md). Before, a skill took `description: *d` as the anchored
// text.
func TestAliasesRefused(t *testing.T) {
	tests := []struct {
		name   string
		format Format
		src    string
		line   int
		msg    string
	}{
		{"frontmatter alias", FormatMarkdown, "---\nname: &n x\ndescription: *n\n---\nbody\n", 3, yamlplain.AliasMessage},
		{"alias in a list", FormatMarkdown, "---\nname: x\ndescription: d\ntriggers: [&t deploy, *t]\n---\nbody\n", 4, yamlplain.AliasMessage},
		{"skill.yaml alias", FormatYAML, "name: x\ndescription: d\nprompt: &p do it\nsteps:\n  - {name: a, prompt: *p}\n", 5, yamlplain.AliasMessage},
		{"skill.yaml merge key", FormatYAML, "name: x\ndescription: d\nprompt: p\nguardrails:\n  - &g {id: a, message: m}\n  - <<: *g\n    id: b\n", 6, yamlplain.MergeKeyMessage},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, _, err := Parse([]byte(tt.src), tt.format, "x")
			if s != nil || !errors.Is(err, ErrSyntax) {
				t.Fatalf("Parse(%q) = %v, %v; want refused with ErrSyntax", tt.src, s, err)
			}
			probs := Problems(err)
			var got *FieldError
			for _, p := range probs {
				if p.Message == tt.msg {
					got = p
				}
			}
			if got == nil || got.Line != tt.line {
				t.Errorf("Parse(%q) problems = %v; want line %d: %q", tt.src, probs, tt.line, tt.msg)
			}
		})
	}
	// The same words as a sequence file gets.
	_, err := seq.ParseYAML([]byte("name: &n s\ndescription: *n\ngroups: []\n"))
	if err == nil || !strings.Contains(err.Error(), yamlplain.AliasMessage) {
		t.Errorf("a sequence with an alias: %v; want %q", err, yamlplain.AliasMessage)
	}
}
