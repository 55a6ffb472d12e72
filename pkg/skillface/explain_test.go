package skillface_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/skillbus/skillbus/pkg/skill"
	"github.com/skillbus/skillbus/pkg/skillface"
)

// TestExplain checks each skill's outcome and reasons for calls that
// mount, trigger, match a work file, overflow the session's bodies,
// retain a body from an earlier round and leave a skill out of the listing.
func TestExplain(t *testing.T) {
	skills := []skill.Skill{
		sk("deploy", triggers("deploy", "roll out"), paths("deploy/**/*.yaml")),
		sk("notes", triggers("notes")),
		sk("release", triggers("release"), invocation(skill.InvocationUserOnly)),
		sk("quiet"),
		sk("zz-long", triggers("zz"), body(strings.Repeat("x", 200), "sha256:zz")),
	}
	type want struct {
		outcome string
		reasons []string
	}
	cases := []struct {
		name    string
		history []skillface.Request
		req     skillface.Request
		opts    []skillface.Option
		want    map[string]want
	}{
		{
			name: "trigger, path and mount",
			req: func() skillface.Request {
				r := user("a", 1, "Please Roll  Out the api")
				r.WorkFiles = []string{"deploy/api/app.yaml", "main.go"}
				r.Mounts = []string{"release"}
				return r
			}(),
			want: map[string]want{
				"deploy":  {skillface.OutcomeActivated, []string{`the trigger "roll out" appears in the message`, `the work file "deploy/api/app.yaml" matches its path "deploy/**/*.yaml"`}},
				"notes":   {skillface.OutcomeNotActivated, []string{`none of its triggers ("notes") appears in the message as a whole word or phrase (case and spacing ignored)`}},
				"release": {skillface.OutcomeActivated, []string{"it is mounted"}},
				"quiet":   {skillface.OutcomeNotActivated, []string{"it has no triggers and no paths: only a mount activates it"}},
			},
		},
		{
			name: "user-only is not triggered; no work files",
			req:  user("b", 1, "cut a release and deploy"),
			want: map[string]want{
				"release": {skillface.OutcomeNotActivated, []string{"it is user-only (invocation: user-only, or disable-model-invocation: true): only a mount activates it"}},
				"deploy":  {skillface.OutcomeActivated, []string{`the trigger "deploy" appears in the message`}},
			},
		},
		{
			name: "session full drops the later skill",
			opts: []skillface.Option{skillface.WithSessionBodies(1)},
			req:  user("c", 1, "deploy the notes"),
			want: map[string]want{
				"deploy": {skillface.OutcomeActivated, []string{`the trigger "deploy" appears in the message`}},
				"notes":  {skillface.OutcomeDropped, []string{`the trigger "notes" appears in the message`, "but the session already holds 1 skill bodies, the most it may (session_bodies), so its body was not injected"}},
			},
		},
		{
			name:    "retained from an earlier round",
			history: []skillface.Request{user("d", 1, "deploy")},
			req:     user("d", 2, "thanks"),
			want: map[string]want{
				"deploy": {skillface.OutcomeActive, []string{"it activated in an earlier round of this session and its body stays in the prompt"}},
			},
		},
		{
			name: "restricted",
			req:  skillface.Request{Restricted: true, Messages: []skillface.Message{{Role: "user", Content: "deploy"}}},
			want: map[string]want{
				"deploy": {skillface.OutcomeNotActivated, []string{"the session is restricted (a group chat, a stranger): skills are neither listed nor injected"}},
			},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := newAsm(t, skills, c.opts...)
			for _, h := range c.history {
				assemble(t, a, h)
			}
			vs := a.Explain(c.req, assemble(t, a, c.req))
			if len(vs) != len(skills) {
				t.Fatalf("Explain gave %d verdicts; want %d", len(vs), len(skills))
			}
			for _, v := range vs {
				w, ok := c.want[v.Name]
				if !ok {
					continue
				}
				if v.Outcome != w.outcome || !reflect.DeepEqual(v.Reasons, w.reasons) {
					t.Errorf("%s: %q %q; want %q %q", v.Name, v.Outcome, v.Reasons, w.outcome, w.reasons)
				}
			}
		})
	}
}

// TestExplainBudgets: the listing and body budgets show in the verdicts.
func TestExplainBudgets(t *testing.T) {
	skills := []skill.Skill{
		sk("alpha", triggers("alpha"), body(strings.Repeat("a", 100), "sha256:a")),
		sk("beta", func(s *skill.Skill) { s.Description = strings.Repeat("long ", 40) }),
		sk("gamma"),
	}
	a := newAsm(t, skills, skillface.WithListingEntries(2), skillface.WithEntryChars(80), skillface.WithBodyBytes(50))
	req := user("s", 1, "alpha")
	vs := a.Explain(req, assemble(t, a, req))
	got := map[string]skillface.Verdict{}
	for _, v := range vs {
		got[v.Name] = v
	}
	if v := got["alpha"]; !v.BodyTruncated || !v.Listed || v.EntryTruncated {
		t.Errorf("alpha = %+v; want a truncated body, listed, entry whole", v)
	}
	if v := got["beta"]; !v.Listed || !v.EntryTruncated || !strings.HasSuffix(v.Entry, ".truncated") {
		t.Errorf("beta = %+v; want listed with a cut entry", v)
	}
	if v := got["gamma"]; v.Listed || v.Entry != "" {
		t.Errorf("gamma = %+v; want left out of the listing", v)
	}
}
