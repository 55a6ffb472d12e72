package skill_test

import (
	"errors"
	"fmt"

	"github.com/skillbus/skillbus/pkg/skill"
)

func ExampleParse() {
	src := []byte(`---
name: pdf-forms
description: Fill PDF forms from structured data.
allowed-tools: Read, Bash(python3 fill.py:*)
disable-model-invocation: true
---
# Filling forms

Run the script.
`)
	s, warns, err := skill.Parse(src, skill.FormatMarkdown, "pdf-forms")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(s.Name, s.Invocation, s.AllowedTools, len(warns))
	for _, sec := range s.Sections {
		fmt.Printf("%d %q [%d,%d)\n", sec.Level, sec.Title, sec.Start, sec.End)
	}
	// Output:
	// pdf-forms user-only [Read Bash(python3 fill.py:*)] 0
	// 1 "Filling forms" [0,3)
}

func ExampleParse_errors() {
	src := []byte("---\nname: PDF Forms\ndescription: d\ncontext: background\n---\n")
	_, _, err := skill.Parse(src, skill.FormatMarkdown, "")
	for _, p := range skill.Problems(err) {
		fmt.Println(p)
	}
	var fe *skill.FieldError
	fmt.Println(errors.Is(err, skill.ErrBadValue), errors.As(err, &fe) && fe.Field == "name")
	// Output:
	// SKILL.md:2: name "PDF Forms" may hold only lowercase letters a–z, digits and hyphens, and character 1 'P' (U+0050) is not one of them; e.g. "pdf-forms"
	// SKILL.md:4: context "background" is not allowed; use inline (the default) or fork
	// true true
}

func ExampleRender() {
	src := []byte(`name: triage
description: Triage a bug report.
prompt: Triage the report.
steps:
  - {name: fix, prompt: Propose a fix., depends: [reproduce]}
  - {name: reproduce, prompt: Reproduce it.}
guardrails:
  - {id: no-prod, message: Never test against production., enforced: true}
`)
	s, _, err := skill.Parse(src, skill.FormatYAML, "triage")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Print(skill.Render(s))
	// Output:
	// Triage the report.
	//
	// ## Steps
	//
	// ### 1. reproduce
	//
	// Reproduce it.
	//
	// ### 2. fix
	//
	// (after: reproduce)
	//
	// Propose a fix.
	//
	// ## Guardrails
	//
	// - **no-prod** (enforced): Never test against production.
}
