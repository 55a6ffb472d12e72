package skillface_test

import (
	"context"
	"testing"

	"github.com/skillbus/skillbus/pkg/skill"
	"github.com/skillbus/skillbus/pkg/skillface"
)

// sk builds a valid skill record; mods adjust it.
func sk(name string, mods ...func(*skill.Skill)) skill.Skill {
	s := skill.Skill{
		Name:        name,
		Description: "Does " + name + " things.",
		Version:     1,
		Invocation:  skill.InvocationBoth,
		Context:     skill.ContextInline,
		Format:      skill.FormatMarkdown,
		Body:        "# " + name + "\n\nInstructions for " + name + ".\n",
		Fingerprint: "sha256:" + name + "-v1",
	}
	for _, m := range mods {
		m(&s)
	}
	return s
}

func triggers(t ...string) func(*skill.Skill) { return func(s *skill.Skill) { s.Triggers = t } }
func paths(p ...string) func(*skill.Skill)    { return func(s *skill.Skill) { s.Paths = p } }
func allowed(t ...string) func(*skill.Skill)  { return func(s *skill.Skill) { s.AllowedTools = t } }
func denied(t ...string) func(*skill.Skill)   { return func(s *skill.Skill) { s.DisallowedTools = t } }
func invocation(i skill.Invocation) func(*skill.Skill) {
	return func(s *skill.Skill) { s.Invocation = i }
}
func body(b, fp string) func(*skill.Skill) {
	return func(s *skill.Skill) { s.Body, s.Fingerprint = b, fp }
}

// newAsm returns an Assembler holding skills.
func newAsm(t testing.TB, skills []skill.Skill, opts ...skillface.Option) *skillface.Assembler {
	t.Helper()
	a, err := skillface.New(opts...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if err := a.SetSkills(skills); err != nil {
		t.Fatalf("SetSkills: %v", err)
	}
	return a
}

// user returns a request with one system message and one user message.
func user(session string, round int64, text string) skillface.Request {
	return skillface.Request{
		SessionID: session,
		Round:     round,
		Messages: []skillface.Message{
			{Role: "system", Content: "You are helpful."},
			{Role: "user", Content: text},
		},
	}
}

func assemble(t testing.TB, a *skillface.Assembler, req skillface.Request) skillface.Response {
	t.Helper()
	resp, err := a.Assemble(context.Background(), req)
	if err != nil {
		t.Fatalf("Assemble(%+v): %v", req, err)
	}
	return resp
}
