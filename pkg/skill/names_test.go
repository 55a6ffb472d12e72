package skill

import (
	"strings"
	"testing"
)

// TestNameMessages: a name outside the rule is told which character is
// not allowed, and offered a corrected name only when the correction is
// plausible — upper case lowered, an accent dropped, separators made
// hyphens — never by dropping the very character that is the problem
// ("émoji" is not "moji").
func TestNameMessages(t *testing.T) {
	tests := []struct {
		name       string
		char       string // the character the message must name
		suggestion string // "" = no suggestion
	}{
		{"PDF Forms", "character 1 'P' (U+0050)", "pdf-forms"},
		{"my_skill", "character 3 '_' (U+005F)", "my-skill"},
		{"émoji", "character 1 'é' (U+00E9)", "emoji"},
		{"Ünïcode-Tool", "character 1 'Ü' (U+00DC)", "unicode-tool"},
		{"🚀launch", "character 1 '🚀' (U+1F680)", ""},
		{"部署", "character 1 '部' (U+90E8)", ""},
		{"pаyments", "character 2 'а' (U+0430)", ""}, // Cyrillic а
		{"a\u200bb", "character 2 (an invisible character, U+200B)", ""},
		{"my skill", "character 3 (a space, U+0020)", "my-skill"},
	}
	for _, tt := range tests {
		_, _, err := Parse(md("name: \""+tt.name+"\"\ndescription: d\n", "b\n"), FormatMarkdown, "")
		ps := Problems(err)
		if len(ps) != 1 {
			t.Errorf("%q: %d problems; want 1: %v", tt.name, len(ps), err)
			continue
		}
		msg := ps[0].Message
		if !strings.Contains(msg, tt.char+" is not one of them") {
			t.Errorf("%q: %q does not name %s", tt.name, msg, tt.char)
		}
		switch {
		case tt.suggestion == "" && strings.Contains(msg, "e.g."):
			t.Errorf("%q: %q offers a suggestion; none is plausible", tt.name, msg)
		case tt.suggestion != "" && !strings.HasSuffix(msg, `; e.g. "`+tt.suggestion+`"`):
			t.Errorf("%q: %q; want the suggestion %q", tt.name, msg, tt.suggestion)
		}
	}
}

// TestWrongTypeIsOneProblem: a required field given with a wrong type is
// one problem (its type), not also "missing".
func TestWrongTypeIsOneProblem(t *testing.T) {
	for _, front := range []string{
		"name: x\ndescription: true\n",
		"name: x\ndescription: [a, b]\n",
		"name: [x]\ndescription: d\n",
		"name: false\ndescription: d\n",
	} {
		_, _, err := Parse(md(front, "b\n"), FormatMarkdown, "x")
		ps := Problems(err)
		if len(ps) != 1 || ps[0].Error() == "" || strings.Contains(ps[0].Message, "missing") {
			t.Errorf("%q: problems %v; want one, about the type", front, err)
		}
	}
}
