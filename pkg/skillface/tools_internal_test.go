package skillface

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseToolPattern(t *testing.T) {
	tests := []struct {
		in      string
		want    toolPattern
		wantErr string
	}{
		{in: "Read", want: toolPattern{name: "Read"}},
		{in: " Read ", want: toolPattern{name: "Read"}},
		{in: "Bash(git:*)", want: toolPattern{name: "Bash", spec: "git:*"}},
		{in: "Bash(git add:*)", want: toolPattern{name: "Bash", spec: "git add:*"}},
		{in: "Bash(uv run *)", want: toolPattern{name: "Bash", spec: "uv run *"}},
		{in: "Read(*)", want: toolPattern{name: "Read"}},
		{in: "Write(src/**)", want: toolPattern{name: "Write", spec: "src/**"}},
		{in: "WebFetch(domain:example.com)", want: toolPattern{name: "WebFetch", spec: "domain:example.com"}},
		{in: "mcp__github__*", want: toolPattern{name: "mcp__github__*", glob: true}},
		{in: "mcp__github", want: toolPattern{name: "mcp__github", mcp: true}},
		{in: "mcp__github__create_issue", want: toolPattern{name: "mcp__github__create_issue"}},
		{in: "", wantErr: "empty tool pattern"},
		{in: "Bash(git:*", wantErr: "does not close"},
		{in: "Bash()", wantErr: "empty parentheses"},
		{in: "(git:*)", wantErr: "no tool name"},
		{in: "Read Grep", wantErr: "no spaces"},
		{in: "mcp__[x", wantErr: "malformed wildcard"},
	}
	for _, tc := range tests {
		got, err := parseToolPattern(tc.in)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("parseToolPattern(%q) error = %v; want one containing %q", tc.in, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("parseToolPattern(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
	}
}

func TestToolPatternMatches(t *testing.T) {
	tests := []struct {
		pattern, tool string
		want          bool
	}{
		{"Bash(git:*)", "Bash", true},
		{"Bash(git:*)", "bash", false},
		{"Bash", "BashOutput", false},
		{"mcp__github__*", "mcp__github__create_issue", true},
		{"mcp__github__*", "mcp__gitlab__x", false},
		{"mcp__github", "mcp__github__create_issue", true},
		{"mcp__github", "mcp__github", true},
		{"mcp__github", "mcp__githubx__y", false},
		{"Web*", "WebFetch", true},
		{"*", "Anything", true},
	}
	for _, tc := range tests {
		p, err := parseToolPattern(tc.pattern)
		if err != nil {
			t.Fatal(err)
		}
		if got := p.matches(tc.tool); got != tc.want {
			t.Errorf("pattern %q matches %q = %v; want %v", tc.pattern, tc.tool, got, tc.want)
		}
	}
}

func TestToolSurface(t *testing.T) {
	caller := []string{"Read", "Write", "Bash", "Grep", "WebFetch", "mcp__github__create_issue", "mcp__github__list"}
	type sk struct{ allow, deny []string }
	tests := []struct {
		name       string
		skills     []sk
		wantTools  []string
		wantLimits []ToolLimit
	}{
		{"no declarations keep the caller's tools", []sk{{}},
			caller, nil},
		{"allowed is an upper bound", []sk{{allow: []string{"Read", "Grep", "NotACallerTool"}}},
			[]string{"Read", "Grep"}, nil},
		{"union of allowed over skills", []sk{{allow: []string{"Read"}}, {allow: []string{"Grep"}}},
			[]string{"Read", "Grep"}, nil},
		{"a skill without allowed does not widen", []sk{{allow: []string{"Read"}}, {}},
			[]string{"Read"}, nil},
		{"disallowed removes", []sk{{deny: []string{"Write", "WebFetch"}}},
			[]string{"Read", "Bash", "Grep", "mcp__github__create_issue", "mcp__github__list"}, nil},
		{"allowed minus disallowed over skills", []sk{{allow: []string{"Read", "Write"}}, {deny: []string{"Write"}}},
			[]string{"Read"}, nil},
		{"specifier admits the tool with a limit", []sk{{allow: []string{"Read", "Bash(git add:*)", "Bash(git status:*)"}}},
			[]string{"Read", "Bash"}, []ToolLimit{{Tool: "Bash", Allow: []string{"git add:*", "git status:*"}}}},
		{"bare name lifts the limit", []sk{{allow: []string{"Bash(git:*)"}}, {allow: []string{"Bash"}}},
			[]string{"Bash"}, nil},
		{"star specifier is the bare name", []sk{{allow: []string{"Bash(*)", "Bash(git:*)"}}},
			[]string{"Bash"}, nil},
		{"denied specifier keeps the tool with a deny limit", []sk{{deny: []string{"Bash(rm:*)"}}},
			caller, []ToolLimit{{Tool: "Bash", Deny: []string{"rm:*"}}}},
		{"denied star removes", []sk{{deny: []string{"Bash(*)"}}},
			[]string{"Read", "Write", "Grep", "WebFetch", "mcp__github__create_issue", "mcp__github__list"}, nil},
		{"allow and deny limits together", []sk{{allow: []string{"Bash(git:*)"}, deny: []string{"Bash(git push:*)"}}},
			[]string{"Bash"}, []ToolLimit{{Tool: "Bash", Allow: []string{"git:*"}, Deny: []string{"git push:*"}}}},
		{"mcp server prefix", []sk{{allow: []string{"mcp__github"}}},
			[]string{"mcp__github__create_issue", "mcp__github__list"}, nil},
		{"glob in the name", []sk{{allow: []string{"mcp__github__c*", "Re*"}}},
			[]string{"Read", "mcp__github__create_issue"}, nil},
		{"limits sorted by tool and deduplicated", []sk{{allow: []string{"WebFetch(domain:a.com)", "Bash(ls:*)"}}, {allow: []string{"Bash(ls:*)"}}},
			[]string{"Bash", "WebFetch"}, []ToolLimit{{Tool: "Bash", Allow: []string{"ls:*"}}, {Tool: "WebFetch", Allow: []string{"domain:a.com"}}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var es []*entry
			for _, s := range tc.skills {
				e := &entry{}
				for _, a := range s.allow {
					p, err := parseToolPattern(a)
					if err != nil {
						t.Fatal(err)
					}
					e.allowed = append(e.allowed, p)
				}
				for _, d := range s.deny {
					p, err := parseToolPattern(d)
					if err != nil {
						t.Fatal(err)
					}
					e.disallowed = append(e.disallowed, p)
				}
				es = append(es, e)
			}
			tools, limits := toolSurface(caller, es)
			if !reflect.DeepEqual(tools, tc.wantTools) {
				t.Errorf("tools = %q; want %q", tools, tc.wantTools)
			}
			if !reflect.DeepEqual(limits, tc.wantLimits) {
				t.Errorf("limits = %+v; want %+v", limits, tc.wantLimits)
			}
		})
	}
}

func TestToolSurfaceDeduplicatesCaller(t *testing.T) {
	tools, _ := toolSurface([]string{"Read", "Read", "Grep"}, []*entry{{}})
	if want := []string{"Read", "Grep"}; !reflect.DeepEqual(tools, want) {
		t.Errorf("tools = %q; want %q", tools, want)
	}
}

func FuzzToolPattern(f *testing.F) {
	for _, s := range []string{"Read", "Bash(git:*)", "Bash(uv run *)", "mcp__x", "mcp__x__*", "Bash(", "()", "[", "Read(*)"} {
		f.Add(s, "Bash")
	}
	f.Fuzz(func(t *testing.T, pattern, tool string) {
		p, err := parseToolPattern(pattern)
		if err != nil {
			if strings.Contains(err.Error(), "skillface.") || strings.Contains(err.Error(), "toolPattern") {
				t.Fatalf("error names a Go type: %v", err)
			}
			return
		}
		if p.name == "" {
			t.Fatalf("parseToolPattern(%q) accepted an empty name", pattern)
		}
		_ = p.matches(tool)
		if !p.glob && !p.mcp && !p.matches(p.name) {
			t.Fatalf("pattern %q does not match its own name %q", pattern, p.name)
		}
	})
}
