package skill

import (
	"errors"
	"strings"
	"testing"
)

var fuzzSeeds = []string{
	"---\nname: x\ndescription: d\n---\n# Body\n",
	"\uFEFF---\r\nname: x\r\ndescription: |\r\n  a\r\n  ---\r\n---\r\nbody",
	"---\nname: x\n",
	"---\n---\n",
	"---\nname: [x\n---\n",
	"---\nname: x\ndescription: d\nallowed-tools: Bash(git add:*), Read\ndisallowed-tools: Read\n---\n",
	"---\nname: x\ndescription: d\nmetadata: {a: {b: c}}\ntriggers: [a, [b]]\n---\n",
	"---\n&a name: x\ndescription: *a\n---\n",
	"---\nname: x\ndescription: d\ninvocation: both\nuser-invocable: false\n---\n",
}

// FuzzParseMarkdown checks that any input either loads or fails with
// *FieldErrors whose lines lie inside the file, never panics, and that a
// loaded record's sections tile its body.
func FuzzParseMarkdown(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		checkParse(t, src, FormatMarkdown)
	})
}

// FuzzParseYAML does the same for skill.yaml input.
func FuzzParseYAML(f *testing.F) {
	f.Add(yamlSkill)
	f.Add("name: x\ndescription: d\nsteps:\n  - {name: a, prompt: p, depends: [b]}\n  - {name: b, prompt: p, depends: [a]}\n")
	f.Add("name: x\ndescription: d\nprompt: p\nrefs: [{name: r, type: url, value: 'http://h'}]\n")
	f.Fuzz(func(t *testing.T, src string) {
		checkParse(t, src, FormatYAML)
	})
}

func checkParse(t *testing.T, src string, format Format) {
	s, _, err := Parse([]byte(src), format, "x")
	lines := strings.Count(src, "\n") + 1
	if err != nil {
		if s != nil {
			t.Fatalf("Parse(%q) returned a record and an error %v", src, err)
		}
		for _, p := range Problems(err) {
			if p.Err == nil || !errors.Is(err, p.Err) || p.Line < 0 || p.Line > lines || p.Message == "" {
				t.Fatalf("Parse(%q): problem %+v is not a positioned FieldError", src, p)
			}
		}
		return
	}
	if s.Name != "x" || s.Description == "" || s.Invocation == "" || s.Context == "" || s.Version < 1 {
		t.Fatalf("Parse(%q) = %+v: a record without its required fields", src, s)
	}
	next := 0
	for _, sec := range s.Sections {
		if sec.Start != next {
			t.Fatalf("Parse(%q): sections do not tile the body: %v", src, s.Sections)
		}
		next = sec.End
	}
}
