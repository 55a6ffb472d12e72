package cli

import (
	"encoding/json"
	"testing"

	"github.com/skillbus/skillbus/pkg/events"
)

func TestRegistryProblemText(t *testing.T) {
	tests := []struct {
		name string
		ev   events.RegistryEvent
		want string
	}{
		{"invalid, kept version on the same line",
			events.RegistryEvent{Kind: "skill", Op: events.OpInvalid, Name: "k", File: "k/SKILL.md", Kept: "k/SKILL.md",
				Error: "k/SKILL.md:4: context \"nope\" is not allowed\nk/SKILL.md:5: version 0 is not allowed"},
			"skillbus dev: invalid k/SKILL.md:4: context \"nope\" is not allowed (keeping the last good version of k until k/SKILL.md is fixed)\n" +
				"skillbus dev: invalid k/SKILL.md:5: version 0 is not allowed\n"},
		{"invalid without a kept version, with a warning",
			events.RegistryEvent{Kind: "skill", Op: events.OpInvalid, File: "n/SKILL.md", Error: "n/SKILL.md:1: no frontmatter",
				Warnings: []string{"n/SKILL.md:3: unknown field \"x\" is ignored"}},
			"skillbus dev: invalid n/SKILL.md:1: no frontmatter\nskillbus dev: warning n/SKILL.md:3: unknown field \"x\" is ignored\n"},
		{"invalid tree entry without a prefix",
			events.RegistryEvent{Kind: "tree", Op: events.OpInvalid, File: "all", Error: "not followed: a symlink to /"},
			"skillbus dev: invalid all: not followed: a symlink to /\n"},
		{"warning",
			events.RegistryEvent{Kind: "skill", Op: events.OpWarning, File: "t/SKILL.md", Warnings: []string{"t/SKILL.md:4: a", "t/SKILL.md:6: b"}},
			"skillbus dev: warning t/SKILL.md:4: a\nskillbus dev: warning t/SKILL.md:6: b\n"},
		{"reverted",
			events.RegistryEvent{Kind: "skill", Op: events.OpReverted, Name: "pdf", Error: "SKILLS/pdf was written at revision 5 …; put back"},
			"skillbus dev: reverted: SKILLS/pdf was written at revision 5 …; put back\n"},
		{"clash", events.RegistryEvent{Kind: "skill", Op: events.OpClash, Error: "skill name \"a\" is defined by both x and y"},
			"skillbus dev: clash: skill name \"a\" is defined by both x and y\n"},
		{"fixed", events.RegistryEvent{Kind: "sequence", Op: events.OpFixed, Name: "s", File: "seqs/s.seq.yaml"},
			"skillbus dev: fixed seqs/s.seq.yaml: sequence \"s\" loads again\n"},
		{"put is not a problem", events.RegistryEvent{Kind: "skill", Op: events.OpPut, Name: "a"}, ""},
	}
	for _, tt := range tests {
		data, _ := json.Marshal(tt.ev)
		if got := registryProblemText(data); got != tt.want {
			t.Errorf("%s: registryProblemText = %q; want %q", tt.name, got, tt.want)
		}
	}
	if got := registryEventDetail("events.registry.skill.warning", []byte(`{"op":"warning","file":"a","warnings":["a:1: w"]}`)); got != "    warning: a:1: w\n" {
		t.Errorf("registryEventDetail = %q", got)
	}
	if got := registryEventDetail("events.run.x.started", []byte(`{"warnings":["a"]}`)); got != "" {
		t.Errorf("registryEventDetail(run event) = %q; want \"\"", got)
	}
}
