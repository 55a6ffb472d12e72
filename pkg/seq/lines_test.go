package seq

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// problemsOf parses src (YAML) and returns its problems; it fails the test
// when src is valid.
func problemsOf(t *testing.T, src string) Errors {
	t.Helper()
	_, err := ParseYAML([]byte(src))
	var errs Errors
	if !errors.As(err, &errs) {
		t.Fatalf("ParseYAML(%q) = %v; want problems", src, err)
	}
	return errs
}

// findProblem returns the problem whose text contains text.
func findProblem(t *testing.T, errs Errors, text string) *Error {
	t.Helper()
	for _, e := range errs {
		if strings.Contains(e.Error(), text) {
			return e
		}
	}
	t.Fatalf("no problem contains %q:\n%v", text, errs)
	return nil
}

// TestProblemLines: each problem is reported at the line of the field it
// is about — an unknown field at its key (not at its value, which may start
// lines later), a `when` problem at the `when:` line (not the group's), an
// `args` problem at the argument that holds the reference (not the call's
// line) — and the problems come in line order.
func TestProblemLines(t *testing.T) {
	t.Run("unknown field at its key", func(t *testing.T) {
		errs := problemsOf(t, "name: t3\n\n\ngruops:\n\n\n  - name: g\n")
		if e := findProblem(t, errs, `unknown field "gruops"`); e.Line != 4 {
			t.Errorf("unknown field at line %d; want 4 (the key), not 7 (its value)", e.Line)
		}
		errs = problemsOf(t, "name: t\ngroups:\n  - name: g\n    tools:\n      - tool: fs.list\n        extra:\n          a: 1\n    bogus:\n      - 1\n")
		if e := findProblem(t, errs, `unknown field "extra"`); e.Line != 6 {
			t.Errorf("unknown call field at line %d; want 6", e.Line)
		}
		if e := findProblem(t, errs, `unknown field "bogus"`); e.Line != 8 {
			t.Errorf("unknown group field at line %d; want 8", e.Line)
		}
	})
	t.Run("when and args at their own lines", func(t *testing.T) {
		src := `name: w
groups:
  - name: g
    in:
      x: integer
    out:
      r: object
    when: >-
      $args.x >
    tools:
      - tool: t
        as: r
      - tool: u
        args:
          a: 1
          b: $args.nope
          c: "$args."
`
		errs := problemsOf(t, src)
		if e := findProblem(t, errs, `when: "$args.x >" does not compile`); e.Line != 8 {
			t.Errorf("when problem at line %d; want 8 (the when: line), not 3 (the group's)", e.Line)
		}
		if e := findProblem(t, errs, "reads $args.nope"); e.Line != 16 {
			t.Errorf("args problem at line %d; want 16 (the argument b), not 13 (the call's)", e.Line)
		}
		if e := findProblem(t, errs, `"$args." is not a valid reference`); e.Line != 17 {
			t.Errorf("malformed reference at line %d; want 17", e.Line)
		}
	})
	t.Run("slots at their keys", func(t *testing.T) {
		src := "name: s\ngroups:\n  - name: g\n    out:\n      a: string\n      b: string\n    tools: [{tool: t, as: a}]\n"
		if e := findProblem(t, problemsOf(t, src), "out.b"); e.Line != 6 {
			t.Errorf("out.b problem at line %d; want 6", e.Line)
		}
		src = "name: s\nschedule: \"@every 1m\"\ngroups:\n  - name: g\n    in:\n      repo: string\n    tools: [{tool: t, args: {r: $args.repo}}]\n"
		if e := findProblem(t, problemsOf(t, src), "in.repo"); e.Line != 6 {
			t.Errorf("in.repo problem at line %d; want 6", e.Line)
		}
	})
	t.Run("sorted by line", func(t *testing.T) {
		src := "name: s\ngroups:\n  - name: g\n    parallel: \"no\"\n    gruops: 1\n    missing: maybe\n    tools: [{tool: t}]\ntimezon: x\n"
		errs := problemsOf(t, src)
		if len(errs) != 4 {
			t.Fatalf("got %d problems; want 4:\n%v", len(errs), errs)
		}
		for i := 1; i < len(errs); i++ {
			if errs[i].Line < errs[i-1].Line {
				t.Errorf("problem %d (line %d) after problem %d (line %d):\n%v", i+1, errs[i].Line, i, errs[i-1].Line, errs)
			}
		}
		if errs[0].Line != 4 || errs[3].Line != 8 {
			t.Errorf("lines %d…%d; want 4…8:\n%v", errs[0].Line, errs[3].Line, errs)
		}
	})
}

// TestScopeHintSaysWhatIsTrue: a call that reads a slot its own group
// writes is told so — not that "earlier groups write" it — and the hint
// names only what earlier groups really write.
func TestScopeHintSaysWhatIsTrue(t *testing.T) {
	src := "name: s\ngroups:\n  - name: g\n    out: {r: object}\n    tools:\n      - {tool: t, as: r}\n      - {tool: u, args: {p: $args.r}}\n"
	e := findProblem(t, problemsOf(t, src), "reads $args.r")
	for _, want := range []string{`"r" is an out slot of this same group`, `tool 1 "t"`, "move this call to a later group", `"r": object`} {
		if !strings.Contains(e.Message, want) {
			t.Errorf("message %q lacks %q", e.Message, want)
		}
	}
	if strings.Contains(e.Message, "earlier groups") {
		t.Errorf("message %q speaks of earlier groups; there is none", e.Message)
	}
	src = "name: s\ngroups:\n  - name: g\n    tools: [{tool: t, args: {p: $args.x}}]\n"
	if e := findProblem(t, problemsOf(t, src), "reads $args.x"); !strings.Contains(e.Message, "this is the first group") || strings.Contains(e.Message, "earlier groups write") {
		t.Errorf("first group's hint = %q", e.Message)
	}
	src = "name: s\ngroups:\n  - name: a\n    out: {early: string}\n    tools: [{tool: t, as: early}]\n  - name: b\n    out: {own: string}\n    tools: [{tool: t, as: own}, {tool: u, args: {p: $args.x}}]\n"
	e = findProblem(t, problemsOf(t, src), "reads $args.x")
	if !strings.Contains(e.Message, "earlier groups write early: string;") || strings.Contains(e.Message, "own") {
		t.Errorf("second group's hint = %q; want only group a's slot", e.Message)
	}
}

// TestNearMissSuggestions: a value one or two edits (or a case) away from
// a legal one is named.
func TestNearMissSuggestions(t *testing.T) {
	tests := []struct{ field, value, want string }{
		{"missing", "degarde", `did you mean "degrade"?`},
		{"on_error", "retri", `did you mean "retry"?`},
		{"on_error", "Continue", `did you mean "continue"?`},
	}
	for _, tt := range tests {
		src := "name: s\ngroups:\n  - name: g\n    " + tt.field + ": " + tt.value + "\n    tools: [{tool: t}]\n"
		if e := findProblem(t, problemsOf(t, src), tt.field+": got"); !strings.Contains(e.Message, tt.want) {
			t.Errorf("%s: %s: %q lacks %q", tt.field, tt.value, e.Message, tt.want)
		}
	}
	src := "name: s\ngroups:\n  - name: g\n    missing: sometimes\n    tools: [{tool: t}]\n"
	if e := findProblem(t, problemsOf(t, src), "missing: got"); strings.Contains(e.Message, "did you mean") {
		t.Errorf("a far value got a suggestion: %q", e.Message)
	}
	types := map[string]string{"strin": "string", "Object": "object", "int": "integer", "array<int>": "array<integer>", "boolean": "bool"}
	for got, want := range types {
		src := "name: s\ngroups:\n  - name: g\n    in: {a: \"" + got + "\"}\n    tools: [{tool: t, args: {x: $args.a}}]\n"
		if e := findProblem(t, problemsOf(t, src), "in.a"); !strings.Contains(e.Message, `did you mean "`+want+`"?`) {
			t.Errorf("type %q: %q lacks the suggestion %q", got, e.Message, want)
		}
	}
	zones := map[string]string{"europe/berlin": "Europe/Berlin", "AMERICA/NEW_YORK": "America/New_York", "utc": "UTC", "Europe/Berln": "Europe/Berlin", "europe/isle_of_man": "Europe/Isle_of_Man"}
	for got, want := range zones {
		src := "name: s\nschedule: \"0 0 9 * * *\"\ntimezone: " + got + "\ngroups:\n  - name: g\n    tools: [{tool: t}]\n"
		if e := findProblem(t, problemsOf(t, src), "timezone"); !strings.Contains(e.Message, `did you mean "`+want+`"?`) {
			t.Errorf("timezone %q: %q lacks the suggestion %q", got, e.Message, want)
		}
	}
	src = "name: s\nschedule: \"0 0 9 * * *\"\ntimezone: Mars/Olympus\ngroups:\n  - name: g\n    tools: [{tool: t}]\n"
	if e := findProblem(t, problemsOf(t, src), "timezone"); strings.Contains(e.Message, "did you mean") {
		t.Errorf("an unknown zone got a suggestion: %q", e.Message)
	}
}

// TestZoneNamesLoad: every name of the embedded list is a zone Go loads,
// so a suggestion is never a name that validation refuses.
func TestZoneNamesLoad(t *testing.T) {
	names := zoneList()
	if len(names) < 400 {
		t.Fatalf("%d zone names; the IANA database has about 600", len(names))
	}
	for _, z := range names {
		if _, err := time.LoadLocation(z); err != nil {
			t.Errorf("zones.txt lists %q, which does not load: %v", z, err)
		}
	}
}

// TestNotASequenceIsNotEchoed: a document that is not a sequence at all
// (a file read by mistake) is quoted only by a short snippet; Markdown
// with frontmatter is named as such (a SKILL.md is a skill).
func TestNotASequenceIsNotEchoed(t *testing.T) {
	passwd := "root:x:0:0:root:/root:/bin/bash\ndaemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin\nsecret-user:x:1000:1000::/home/secret:/bin/sh\n"
	_, err := ParseYAML([]byte(passwd))
	if err == nil {
		t.Fatal("passwd parsed as a sequence")
	}
	msg := err.Error()
	if !strings.Contains(msg, `"root:x:0:0:root:/roo…"`) || strings.Contains(msg, "daemon") || strings.Contains(msg, "secret") {
		t.Errorf("error = %q; want a 20-character snippet and nothing more", msg)
	}
	_, err = ParseFile("SKILL.md", []byte("---\nname: s\ndescription: d\n---\n# Title\n\nSome text: here\n"))
	if err == nil || !strings.Contains(err.Error(), "Markdown with YAML frontmatter") || !strings.Contains(err.Error(), "not a sequence") {
		t.Errorf("SKILL.md parsed as a sequence: %v", err)
	}
	_, err = ParseYAML([]byte("---\nname: a\ngroups: [{name: g, tools: [{tool: t}]}]\n---\nname: b\n"))
	if err == nil || !strings.Contains(err.Error(), "more than one YAML document") {
		t.Errorf("two sequences in one file: %v", err)
	}
}
