package skill

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skillbus/skillbus/pkg/sections"
)

// TestExampleSkills loads the repository's example skills without warnings
// and reads the long one the way skill_info does.
func TestExampleSkills(t *testing.T) {
	for _, name := range []string{"jetstream-incident", "k8s-rollout-check", "release-train"} {
		s, warns, err := Load(filepath.Join("..", "..", "examples", "skills", name))
		if err != nil || len(warns) != 0 || s.Name != name {
			t.Fatalf("Load(%s) = %v, warnings %v", name, err, warns)
		}
	}
	s, _, _ := Load(filepath.Join("..", "..", "examples", "skills", "jetstream-incident"))
	whole, err := sections.InfoWith(s.Body, s.Sections, "", sections.Limits{})
	if err != nil || !strings.Contains(whole, "lines shown.") || !strings.Contains(whole, "    - Redelivery storm (lines ") {
		t.Errorf("Info(jetstream-incident) has no table of contents:\n%s", whole)
	}
	sec, err := sections.InfoWith(s.Body, s.Sections, "classify", sections.Limits{})
	if err != nil || !strings.HasPrefix(sec, "## Classify\n") || !strings.Contains(sec, "### No responders") || strings.Contains(sec, "## Mitigate") {
		t.Errorf("Info(jetstream-incident, classify) = %q, %v; want the Classify section with its subsections", sec, err)
	}
	if _, err := sections.InfoWith(s.Body, s.Sections, "kafka", sections.Limits{}); !errors.Is(err, sections.ErrNoSection) {
		t.Errorf("Info(kafka) error = %v; want ErrNoSection", err)
	}
}

func TestEmptyAllowedToolsWarns(t *testing.T) {
	s, warns, err := Parse(md("name: x\ndescription: d\nallowed-tools: []\n", "b\n"), FormatMarkdown, "x")
	if err != nil || len(warns) != 1 || warns[0].Line != 4 || s.AllowedTools != nil {
		t.Errorf("Parse(allowed-tools: []) = %v, warnings %v; want one warning on line 4 and no bound", err, warns)
	}
}
