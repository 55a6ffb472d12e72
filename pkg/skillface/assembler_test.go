package skillface_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/skillbus/skillbus/pkg/skill"
	"github.com/skillbus/skillbus/pkg/skillface"
)

func TestNewOptions(t *testing.T) {
	tests := []struct {
		name    string
		opt     skillface.Option
		wantErr bool
	}{
		{"entry chars at minimum", skillface.WithEntryChars(skillface.MinEntryChars), false},
		{"entry chars below minimum", skillface.WithEntryChars(skillface.MinEntryChars - 1), true},
		{"listing entries 1", skillface.WithListingEntries(1), false},
		{"listing entries 0", skillface.WithListingEntries(0), true},
		{"session bodies 0", skillface.WithSessionBodies(0), true},
		{"session bodies 10", skillface.WithSessionBodies(10), false},
		{"body bytes negative", skillface.WithBodyBytes(-1), true},
		{"body bytes 1", skillface.WithBodyBytes(1), false},
		{"max attempts 0", skillface.WithMaxAttempts(0), true},
		{"nil store", skillface.WithSessionStore(nil), true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := skillface.New(tc.opt)
			if (err != nil) != tc.wantErr {
				t.Fatalf("New(%s) error = %v; want error %v", tc.name, err, tc.wantErr)
			}
			if err != nil && !errors.Is(err, skillface.ErrInvalidOption) {
				t.Fatalf("New(%s) error = %v; want it to wrap ErrInvalidOption", tc.name, err)
			}
		})
	}
}

func TestPutSkillRejectsInvalidRecords(t *testing.T) {
	tests := []struct {
		name string
		s    skill.Skill
		want string
	}{
		{"no name", sk("", func(s *skill.Skill) { s.Name = "" }), "no name"},
		{"empty invocation", sk("a", invocation("")), `invocation ""`},
		{"unknown invocation", sk("a", invocation("sometimes")), `invocation "sometimes"`},
		{"bad glob", sk("a", paths("src/[a")), `paths entry "src/[a"`},
		{"bad allowed tool", sk("a", allowed("Bash(git:*")), "allowed-tools"},
		{"bad disallowed tool", sk("a", denied("")), "disallowed-tools"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := newAsm(t, nil)
			err := a.PutSkill(tc.s)
			if !errors.Is(err, skillface.ErrInvalidSkill) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("PutSkill(%s) = %v; want ErrInvalidSkill mentioning %q", tc.name, err, tc.want)
			}
			if resp := assemble(t, a, user("s", 1, "hi")); len(resp.Messages) != 2 {
				t.Fatalf("after a rejected PutSkill the skill set changed: %d messages", len(resp.Messages))
			}
		})
	}
}

func TestSetSkillsAllOrNothing(t *testing.T) {
	a := newAsm(t, []skill.Skill{sk("keep")})
	err := a.SetSkills([]skill.Skill{sk("new"), sk("new"), sk("bad", invocation("x"))})
	if !errors.Is(err, skillface.ErrInvalidSkill) || !strings.Contains(err.Error(), "given twice") || !strings.Contains(err.Error(), `"bad"`) {
		t.Fatalf("SetSkills with a duplicate and a bad record = %v; want both reported", err)
	}
	resp := assemble(t, a, user("s", 1, "hi"))
	if !strings.Contains(resp.Messages[1].Content, "- keep:") || strings.Contains(resp.Messages[1].Content, "- new") {
		t.Fatalf("a failed SetSkills changed the skill set; listing:\n%s", resp.Messages[1].Content)
	}
}

func TestInvalidRequest(t *testing.T) {
	a := newAsm(t, []skill.Skill{sk("a")})
	tests := []struct {
		name string
		req  skillface.Request
		want string
	}{
		{"no session", skillface.Request{Round: 1}, "session_id"},
		{"round 0", skillface.Request{SessionID: "s"}, "round 0"},
		{"message without role", skillface.Request{SessionID: "s", Round: 1, Messages: []skillface.Message{{Content: "x"}}}, "message 1 has no role"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := a.Assemble(context.Background(), tc.req)
			if !errors.Is(err, skillface.ErrInvalidRequest) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Assemble(%s) = %v; want ErrInvalidRequest mentioning %q", tc.name, err, tc.want)
			}
		})
	}
}

func TestListing(t *testing.T) {
	a := newAsm(t, []skill.Skill{
		sk("zeta"),
		sk("alpha", func(s *skill.Skill) { s.WhenToUse = "When the user\n  says alpha." }),
		sk("model", invocation(skill.InvocationModelOnly)),
		sk("manual", invocation(skill.InvocationUserOnly)),
	})
	resp := assemble(t, a, user("s", 1, "hi"))
	want := "Skills available in this session (4), by name. A skill's instructions are added to the conversation when it activates: " +
		"when a trigger word appears in the user's message, a work file matches its paths, or the user mounts it.\n" +
		"- alpha: Does alpha things. When to use: When the user says alpha.\n" +
		"- manual (only the user can start this skill): Does manual things.\n" +
		"- model\n" +
		"- zeta: Does zeta things."
	if got := resp.Messages[1]; got.Role != "system" || got.Content != want {
		t.Fatalf("listing message = %+v\nwant content:\n%s", got, want)
	}
	if resp.Counts != (skillface.Counts{}) {
		t.Fatalf("counts = %+v; want zero", resp.Counts)
	}
}

func TestListingBudgets(t *testing.T) {
	long := strings.Repeat("é", 300) // 300 characters, 600 bytes
	skills := []skill.Skill{
		sk("a-long", func(s *skill.Skill) { s.Description = long }),
		sk("b"), sk("c"), sk("d"),
	}
	a := newAsm(t, skills, skillface.WithEntryChars(100), skillface.WithListingEntries(3))
	resp := assemble(t, a, user("s", 1, "hi"))
	listing := resp.Messages[1].Content
	lines := strings.Split(listing, "\n")
	if lines[1] != "- a-long: "+strings.Repeat("é", 100-len("- a-long: ")-len(" .truncated"))+" .truncated" {
		t.Errorf("cut entry = %q", lines[1])
	}
	for _, l := range lines[1:] {
		if n := utf8.RuneCountInString(l); strings.HasPrefix(l, "- ") && n > 100 {
			t.Errorf("entry %q has %d characters; want at most 100", l, n)
		}
	}
	if strings.Contains(listing, "- d") {
		t.Errorf("listing shows d beyond the 3-entry budget:\n%s", listing)
	}
	wantLast := ".truncated: 1 entry was cut to 100 characters. 1 more skill is not listed (the listing shows at most 3); they can still be mounted by name."
	if last := lines[len(lines)-1]; last != wantLast {
		t.Errorf("last line = %q; want %q", last, wantLast)
	}
	if want := (skillface.Counts{EntriesTruncated: 1, EntriesDropped: 1}); resp.Counts != want {
		t.Errorf("counts = %+v; want %+v", resp.Counts, want)
	}
	// The skill beyond the listing still mounts.
	req := user("s", 2, "hi")
	req.Mounts = []string{"d"}
	if r := assemble(t, a, req); !reflect.DeepEqual(r.Activated, []string{"d"}) {
		t.Errorf("mount of an unlisted skill: activated = %q; want [d]", r.Activated)
	}
}

func TestNoSkillsNoBlocks(t *testing.T) {
	a := newAsm(t, nil)
	req := user("s", 1, "deploy")
	resp := assemble(t, a, req)
	if !reflect.DeepEqual(resp.Messages, req.Messages) {
		t.Fatalf("with no skills, messages = %+v; want the request's", resp.Messages)
	}
}

func TestActivation(t *testing.T) {
	skills := []skill.Skill{
		sk("deployer", triggers("deploy", "ship it"), allowed("Bash")),
		sk("gopher", paths("**/*.go")),
		sk("docs", paths("docs/**")),
		sk("model", invocation(skill.InvocationModelOnly), triggers("modelword")),
		sk("manual", invocation(skill.InvocationUserOnly), triggers("deploy"), paths("**")),
		sk("chinese", triggers("部署")),
	}
	tests := []struct {
		name   string
		msgs   []skillface.Message
		files  []string
		mounts []string
		want   []string
	}{
		{name: "nothing", msgs: []skillface.Message{{Role: "user", Content: "hello"}}},
		{name: "trigger word", msgs: []skillface.Message{{Role: "user", Content: "Please DEPLOY."}}, want: []string{"deployer"}},
		{name: "trigger phrase", msgs: []skillface.Message{{Role: "user", Content: "ok, ship  it"}}, want: []string{"deployer"}},
		{name: "no partial word", msgs: []skillface.Message{{Role: "user", Content: "redeployment"}}},
		{name: "only the latest user message", msgs: []skillface.Message{
			{Role: "user", Content: "deploy"}, {Role: "assistant", Content: "deploy done"}, {Role: "user", Content: "thanks"}}},
		{name: "latest user message before assistant", msgs: []skillface.Message{
			{Role: "user", Content: "deploy"}, {Role: "assistant", Content: "ok"}}, want: []string{"deployer"}},
		{name: "cjk trigger", msgs: []skillface.Message{{Role: "user", Content: "请帮我部署服务"}}, want: []string{"chinese"}},
		{name: "model-only by trigger", msgs: []skillface.Message{{Role: "user", Content: "modelword"}}, want: []string{"model"}},
		{name: "work file with **", files: []string{"cmd/x/main.go"}, want: []string{"gopher"}},
		{name: "work file with ./", files: []string{"./docs/a/b.md"}, want: []string{"docs"}},
		{name: "work file not matching", files: []string{"main.py", "documents/x"}},
		{name: "user-only only by mount", mounts: []string{"manual"}, want: []string{"manual"}},
		{name: "mounts first then by name", msgs: []skillface.Message{{Role: "user", Content: "deploy"}},
			files: []string{"a.go"}, mounts: []string{"model", "docs"}, want: []string{"model", "docs", "deployer", "gopher"}},
		{name: "mount twice counts once", mounts: []string{"docs", "docs"}, want: []string{"docs"}},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := newAsm(t, skills, skillface.WithSessionBodies(10))
			resp := assemble(t, a, skillface.Request{SessionID: fmt.Sprint("s", i), Round: 1,
				Messages: tc.msgs, WorkFiles: tc.files, Mounts: tc.mounts})
			if !slices.Equal(resp.Activated, tc.want) {
				t.Errorf("activated = %q; want %q", resp.Activated, tc.want)
			}
			if !slices.Equal(resp.Triggered, tc.want) {
				t.Errorf("triggered = %q; want %q", resp.Triggered, tc.want)
			}
		})
	}
}

func TestUnknownMount(t *testing.T) {
	a := newAsm(t, []skill.Skill{sk("known")})
	req := user("s", 1, "hi")
	req.Mounts = []string{"nope", "known", "also-nope", "nope"}
	_, err := a.Assemble(context.Background(), req)
	var ue *skillface.UnknownSkillError
	if !errors.As(err, &ue) || !errors.Is(err, skillface.ErrUnknownSkill) {
		t.Fatalf("Assemble with unknown mounts = %v; want *UnknownSkillError", err)
	}
	if want := []string{"nope", "also-nope"}; !slices.Equal(ue.Names, want) {
		t.Errorf("Names = %q; want %q", ue.Names, want)
	}
	if msg := err.Error(); !strings.Contains(msg, `"nope", "also-nope"`) || strings.Contains(msg, "known\"") {
		t.Errorf("error = %q; want it to name exactly the unknown skills", msg)
	}
	// Nothing was activated by the failed request.
	if r := assemble(t, a, user("s", 2, "hi")); len(r.Active) != 0 {
		t.Errorf("after a failed mount, active = %q; want none", r.Active)
	}
}

func TestInjectionPlacement(t *testing.T) {
	a := newAsm(t, []skill.Skill{sk("one", triggers("go")), sk("two", triggers("go"))})
	for _, tc := range []struct {
		name     string
		msgs     []skillface.Message
		wantRole []string // roles after assembly; "L" listing, "B" body
	}{
		{"two leading system messages", []skillface.Message{{"system", "s1"}, {"system", "s2"}, {"user", "go"}},
			[]string{"s1", "s2", "L", "B:one", "B:two", "go"}},
		{"no system message", []skillface.Message{{"user", "go"}},
			[]string{"L", "B:one", "B:two", "go"}},
		{"later system message stays in place", []skillface.Message{{"system", "s1"}, {"user", "x"}, {"system", "s2"}, {"user", "go"}},
			[]string{"s1", "L", "B:one", "B:two", "x", "s2", "go"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := assemble(t, a, skillface.Request{SessionID: tc.name, Round: 1, Messages: tc.msgs})
			var got []string
			for _, m := range resp.Messages {
				switch {
				case strings.HasPrefix(m.Content, "Skills available"):
					got = append(got, "L")
				case strings.HasPrefix(m.Content, `Skill "`):
					got = append(got, "B:"+strings.Split(m.Content, `"`)[1])
				default:
					got = append(got, m.Content)
				}
				if got[len(got)-1][0] == 'L' || got[len(got)-1][0] == 'B' {
					if m.Role != "system" {
						t.Errorf("block %q has role %q; want system", got[len(got)-1], m.Role)
					}
				}
			}
			if !slices.Equal(got, tc.wantRole) {
				t.Errorf("message order = %q; want %q", got, tc.wantRole)
			}
		})
	}
}

func TestRequestNotModified(t *testing.T) {
	a := newAsm(t, []skill.Skill{sk("one", triggers("go"))})
	req := user("s", 1, "go")
	req.Tools = []string{"Read"}
	before, _ := json.Marshal(req)
	assemble(t, a, req)
	after, _ := json.Marshal(req)
	if string(before) != string(after) {
		t.Fatalf("Assemble modified the request:\n%s\n%s", before, after)
	}
}

func TestBodyBudgetPerSession(t *testing.T) {
	var skills []skill.Skill
	for _, n := range []string{"a", "b", "c", "d", "e", "f"} {
		skills = append(skills, sk(n, triggers("t"+n)))
	}
	a := newAsm(t, skills)
	r1 := assemble(t, a, user("s", 1, "ta tb tc"))
	if want := []string{"a", "b", "c"}; !slices.Equal(r1.Activated, want) {
		t.Fatalf("round 1 activated = %q; want %q", r1.Activated, want)
	}
	r2 := assemble(t, a, user("s", 2, "tf te td"))
	if !slices.Equal(r2.Activated, []string{"d"}) || !slices.Equal(r2.Dropped, []string{"e", "f"}) {
		t.Fatalf("round 2 activated %q dropped %q; want [d] and [e f]", r2.Activated, r2.Dropped)
	}
	if want := (skillface.Counts{BodiesDropped: 2, SessionOverflow: 2}); r2.Counts != want {
		t.Errorf("round 2 counts = %+v; want %+v", r2.Counts, want)
	}
	if !slices.Equal(r2.Active, []string{"a", "b", "c", "d"}) {
		t.Errorf("round 2 active = %q", r2.Active)
	}
	wantNote := ".dropped: 2 skills activated while this session held its limit of 4 skill bodies and are not loaded (e, f); a skill loads when it activates again while there is room."
	if !strings.HasSuffix(r2.Messages[1].Content, "\n"+wantNote) {
		t.Errorf("listing does not end with the dropped note:\n%s", r2.Messages[1].Content)
	}
	if len(r2.Messages) != 2+1+4 {
		t.Errorf("round 2 has %d messages; want 7 (system, listing, 4 bodies, user)", len(r2.Messages))
	}
	// The note stays on later turns without a trigger.
	r3 := assemble(t, a, user("s", 3, "nothing"))
	if !strings.HasSuffix(r3.Messages[1].Content, wantNote) || r3.Counts.BodiesDropped != 0 || r3.Counts.SessionOverflow != 2 {
		t.Errorf("round 3: counts %+v, listing:\n%s", r3.Counts, r3.Messages[1].Content)
	}
	// Deleting an active skill frees a slot; e activates when it triggers again.
	a.DeleteSkill("b")
	r4 := assemble(t, a, user("s", 4, "te"))
	if !slices.Equal(r4.Activated, []string{"e"}) || !slices.Equal(r4.Active, []string{"a", "c", "d", "e"}) {
		t.Errorf("round 4 activated %q active %q; want [e] and [a c d e]", r4.Activated, r4.Active)
	}
	if r4.Counts.SessionOverflow != 1 || !strings.Contains(r4.Messages[1].Content, "is not loaded (f);") {
		t.Errorf("round 4 counts %+v; listing:\n%s", r4.Counts, r4.Messages[1].Content)
	}
}

func TestBodyTruncation(t *testing.T) {
	b := strings.Repeat("ab€", 10) // 30 characters, 50 bytes; € is 3 bytes
	a := newAsm(t, []skill.Skill{sk("big", triggers("go"), body(b, "sha256:big"))}, skillface.WithBodyBytes(18))
	resp := assemble(t, a, user("s", 1, "go"))
	got := resp.Messages[2].Content
	// 18 bytes would split the fourth € (bytes 17–19): the cut goes back to 17 bytes.
	want := "Skill \"big\" is active. Follow its instructions while they apply.\n\n" +
		"ab€ab€ab€ab\n\n.truncated: this body was cut at 17 of 50 bytes; read the rest section by section with skill_info \"big\"."
	if got != want {
		t.Errorf("body message = %q\nwant %q", got, want)
	}
	if !utf8.ValidString(got) {
		t.Error("body message is not valid UTF-8")
	}
	if resp.Counts.BodiesTruncated != 1 {
		t.Errorf("BodiesTruncated = %d; want 1", resp.Counts.BodiesTruncated)
	}
	// Exactly at the budget: not cut.
	a2 := newAsm(t, []skill.Skill{sk("fit", triggers("go"), body(b, "sha256:fit"))}, skillface.WithBodyBytes(50))
	if r := assemble(t, a2, user("s", 1, "go")); strings.Contains(r.Messages[2].Content, ".truncated") || r.Counts.BodiesTruncated != 0 {
		t.Errorf("a body of exactly the budget was cut: %q", r.Messages[2].Content)
	}
}

func TestDefaultBodyBudgetIs16KiB(t *testing.T) {
	b := strings.Repeat("x", 16<<10+1)
	a := newAsm(t, []skill.Skill{sk("big", triggers("go"), body(b, "sha256:b"))})
	got := assemble(t, a, user("s", 1, "go")).Messages[2].Content
	if !strings.Contains(got, "cut at 16384 of 16385 bytes") {
		t.Errorf("default body budget: message ends %q", got[len(got)-120:])
	}
}

func TestRenderCache(t *testing.T) {
	a := newAsm(t, []skill.Skill{sk("one", triggers("go")), sk("two", triggers("go"))})
	assemble(t, a, user("s", 1, "go"))
	if st := a.Stats(); st.BodyRenders != 2 || st.CacheHits != 0 {
		t.Fatalf("after turn 1: renders %d, hits %d; want 2, 0", st.BodyRenders, st.CacheHits)
	}
	assemble(t, a, user("s", 2, "and then"))
	assemble(t, a, user("other", 1, "go"))
	if st := a.Stats(); st.BodyRenders != 2 || st.CacheHits != 4 {
		t.Fatalf("after turn 2 and another session: renders %d, hits %d; want 2, 4", st.BodyRenders, st.CacheHits)
	}
	// A new definition renders once more.
	if err := a.PutSkill(sk("one", triggers("go"), body("new body", "sha256:one-v2"))); err != nil {
		t.Fatal(err)
	}
	assemble(t, a, user("s", 3, "x"))
	assemble(t, a, user("s", 4, "x"))
	if st := a.Stats(); st.BodyRenders != 3 {
		t.Fatalf("after a changed definition: renders %d; want 3", st.BodyRenders)
	}
}

func TestChangedAndRemovedSkills(t *testing.T) {
	a := newAsm(t, []skill.Skill{sk("one", triggers("go")), sk("two", triggers("go"))})
	assemble(t, a, user("s", 1, "go"))
	if err := a.PutSkill(sk("one", triggers("go"), body("Version two.", "sha256:one-v2"))); err != nil {
		t.Fatal(err)
	}
	r := assemble(t, a, user("s", 2, "hello"))
	if got := r.Messages[2].Content; !strings.HasSuffix(got, "\n\nVersion two.") {
		t.Errorf("changed skill body = %q; want the new definition in its slot", got)
	}
	if !slices.Equal(r.Active, []string{"one", "two"}) || len(r.Activated) != 0 {
		t.Errorf("active %q activated %q; want [one two] and none", r.Active, r.Activated)
	}
	a.DeleteSkill("one")
	r = assemble(t, a, user("s", 3, "hello"))
	if !slices.Equal(r.Active, []string{"two"}) || len(r.Messages) != 4 {
		t.Errorf("after delete: active %q, %d messages; want [two] and 4", r.Active, len(r.Messages))
	}
	if strings.Contains(r.Messages[1].Content, "- one") {
		t.Errorf("deleted skill still listed:\n%s", r.Messages[1].Content)
	}
	// Re-adding it does not bring it back by itself.
	if err := a.PutSkill(sk("one", triggers("go"))); err != nil {
		t.Fatal(err)
	}
	if r := assemble(t, a, user("s", 4, "hello")); !slices.Equal(r.Active, []string{"two"}) {
		t.Errorf("after re-adding: active %q; want [two]", r.Active)
	}
}

func TestToolSurfaceOnlyOnTriggerTurns(t *testing.T) {
	a := newAsm(t, []skill.Skill{
		sk("git", triggers("commit"), allowed("Read", "Bash(git add:*)", "Bash(git commit:*)"), denied("Write")),
		sk("web", triggers("browse"), allowed("WebFetch")),
		sk("plain", triggers("plain")),
	})
	caller := []string{"Read", "Write", "Bash", "WebFetch"}
	req := func(round int64, text string) skillface.Request {
		r := user("s", round, text)
		r.Tools = caller
		return r
	}
	r1 := assemble(t, a, req(1, "please commit"))
	if !slices.Equal(r1.Tools, []string{"Read", "Bash"}) {
		t.Errorf("activation turn tools = %q; want [Read Bash]", r1.Tools)
	}
	if want := []skillface.ToolLimit{{Tool: "Bash", Allow: []string{"git add:*", "git commit:*"}}}; !reflect.DeepEqual(r1.ToolLimits, want) {
		t.Errorf("limits = %+v; want %+v", r1.ToolLimits, want)
	}
	r2 := assemble(t, a, req(2, "thanks"))
	if !slices.Equal(r2.Tools, caller) || r2.ToolLimits != nil || len(r2.Triggered) != 0 {
		t.Errorf("quiet turn: tools %q limits %+v triggered %q; want the caller's tools", r2.Tools, r2.ToolLimits, r2.Triggered)
	}
	r3 := assemble(t, a, req(3, "commit again and browse"))
	if !slices.Equal(r3.Triggered, []string{"git", "web"}) || !slices.Equal(r3.Activated, []string{"web"}) {
		t.Errorf("re-trigger turn: triggered %q activated %q", r3.Triggered, r3.Activated)
	}
	if !slices.Equal(r3.Tools, []string{"Read", "Bash", "WebFetch"}) {
		t.Errorf("re-trigger turn tools = %q; want [Read Bash WebFetch]", r3.Tools)
	}
	r4 := assemble(t, a, req(4, "plain"))
	if !slices.Equal(r4.Tools, caller) {
		t.Errorf("skill without tool fields: tools = %q; want the caller's", r4.Tools)
	}
	// A skill that was dropped for lack of room does not shape the surface.
	b := newAsm(t, []skill.Skill{sk("first", triggers("x")), sk("narrow", triggers("y"), allowed("Read"))}, skillface.WithSessionBodies(1))
	assemble(t, b, user("s", 1, "x"))
	rq := user("s", 2, "y")
	rq.Tools = caller
	if r := assemble(t, b, rq); !slices.Equal(r.Tools, caller) || !slices.Equal(r.Dropped, []string{"narrow"}) {
		t.Errorf("dropped skill: tools %q dropped %q; want the caller's tools and [narrow]", r.Tools, r.Dropped)
	}
}

func TestRestrictedUnchanged(t *testing.T) {
	store := skillface.NewMemoryStore(0)
	a := newAsm(t, []skill.Skill{sk("one", triggers("go"), allowed("Read"))}, skillface.WithSessionStore(store))
	req := skillface.Request{
		SessionID: "group", Round: 1, Restricted: true,
		Messages:  []skillface.Message{{Role: "system", Content: "sys"}, {Role: "user", Content: "go go <b>\u00e9\u200b"}},
		Tools:     []string{"Write", "Read"},
		Mounts:    []string{"unknown-is-ignored"},
		WorkFiles: []string{"a.go"},
	}
	before, _ := json.Marshal(req.Messages)
	resp := assemble(t, a, req)
	after, _ := json.Marshal(resp.Messages)
	if string(before) != string(after) {
		t.Fatalf("restricted messages changed:\n%s\n%s", before, after)
	}
	if &resp.Messages[0] != &req.Messages[0] {
		t.Error("restricted response does not return the request's messages as they are")
	}
	if !slices.Equal(resp.Tools, req.Tools) || len(resp.Activated) != 0 {
		t.Errorf("restricted: tools %q activated %q; want the caller's tools and none", resp.Tools, resp.Activated)
	}
	if store.Len() != 0 {
		t.Errorf("restricted request wrote session state")
	}
	// An unrestricted session with nothing active writes no state either.
	assemble(t, a, user("quiet", 1, "hello"))
	if store.Len() != 0 {
		t.Errorf("a session with nothing active wrote state")
	}
}

func TestRoundReplay(t *testing.T) {
	a := newAsm(t, []skill.Skill{sk("one", triggers("go"))})
	r1 := assemble(t, a, user("s", 1, "go"))
	again := assemble(t, a, user("s", 1, "go"))
	if !reflect.DeepEqual(r1, again) {
		t.Errorf("a retried round differs:\nfirst %+v\nretry %+v", r1, again)
	}
	if st := a.Stats(); st.Activations != 1 {
		t.Errorf("activations = %d; want 1 (a retry does not activate again)", st.Activations)
	}
	if r2 := assemble(t, a, user("s", 2, "go")); len(r2.Activated) != 0 || !slices.Equal(r2.Triggered, []string{"one"}) {
		t.Errorf("round 2: activated %q triggered %q; want none and [one]", r2.Activated, r2.Triggered)
	}
}

func TestConcurrentSessionUpdates(t *testing.T) {
	const n = 32
	var skills []skill.Skill
	for i := range n {
		skills = append(skills, sk(fmt.Sprintf("s%02d", i)))
	}
	a := newAsm(t, skills, skillface.WithSessionBodies(n), skillface.WithMaxAttempts(10000))
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := user("shared", int64(i+1), "hi")
			req.Mounts = []string{fmt.Sprintf("s%02d", i)}
			resp, err := a.Assemble(context.Background(), req)
			if err != nil {
				errs <- err
				return
			}
			if !slices.Contains(resp.Active, req.Mounts[0]) {
				errs <- fmt.Errorf("request %d: its mount %s is not active in its own response %q", i, req.Mounts[0], resp.Active)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	r := assemble(t, a, user("shared", 100, "hi"))
	if len(r.Active) != n {
		t.Fatalf("after %d concurrent mounts the session holds %d skills (%q); an update was lost", n, len(r.Active), r.Active)
	}
	t.Logf("conflicts retried: %d", a.Stats().Conflicts)
}

func TestConcurrentOverflowCounted(t *testing.T) {
	const n = 16
	var skills []skill.Skill
	for i := range n {
		skills = append(skills, sk(fmt.Sprintf("s%02d", i)))
	}
	a := newAsm(t, skills, skillface.WithMaxAttempts(10000))
	var wg sync.WaitGroup
	var mu sync.Mutex
	activated, dropped := 0, 0
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := user("shared", int64(i+1), "hi")
			req.Mounts = []string{fmt.Sprintf("s%02d", i)}
			resp, err := a.Assemble(context.Background(), req)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			activated += len(resp.Activated)
			dropped += len(resp.Dropped)
			mu.Unlock()
		}()
	}
	wg.Wait()
	if activated != 4 || dropped != n-4 {
		t.Fatalf("activated %d dropped %d; want 4 and %d", activated, dropped, n-4)
	}
	if r := assemble(t, a, user("shared", 100, "hi")); r.Counts.SessionOverflow != n-4 {
		t.Fatalf("session overflow = %d; want %d", r.Counts.SessionOverflow, n-4)
	}
}

// failingStore fails every call with err.
type failingStore struct{ err error }

func (f failingStore) Get(context.Context, string) ([]byte, uint64, error) { return nil, 0, f.err }
func (f failingStore) CompareAndSet(context.Context, string, []byte, uint64) (uint64, error) {
	return 0, f.err
}

// alwaysConflict reports a conflict on every write.
type alwaysConflict struct{ skillface.SessionStore }

func (alwaysConflict) CompareAndSet(context.Context, string, []byte, uint64) (uint64, error) {
	return 0, skillface.ErrRevisionMismatch
}

func TestStoreErrors(t *testing.T) {
	boom := errors.New("bucket unavailable")
	a := newAsm(t, []skill.Skill{sk("one", triggers("go"))}, skillface.WithSessionStore(failingStore{boom}))
	if _, err := a.Assemble(context.Background(), user("s", 1, "go")); !errors.Is(err, boom) || !strings.Contains(err.Error(), `session "s"`) {
		t.Errorf("store failure = %v; want it wrapped with the session", err)
	}
	c := newAsm(t, []skill.Skill{sk("one", triggers("go"))},
		skillface.WithSessionStore(alwaysConflict{skillface.NewMemoryStore(0)}), skillface.WithMaxAttempts(3))
	if _, err := c.Assemble(context.Background(), user("s", 1, "go")); !errors.Is(err, skillface.ErrContention) {
		t.Errorf("endless conflicts = %v; want ErrContention", err)
	}
	if got := c.Stats().Conflicts; got != 3 {
		t.Errorf("conflicts = %d; want 3", got)
	}
	// Corrupt state is reported, not silently reset.
	m := skillface.NewMemoryStore(0)
	if _, err := m.CompareAndSet(context.Background(), "s", []byte("{not json"), 0); err != nil {
		t.Fatal(err)
	}
	d := newAsm(t, []skill.Skill{sk("one")}, skillface.WithSessionStore(m))
	if _, err := d.Assemble(context.Background(), user("s", 1, "x")); err == nil || !strings.Contains(err.Error(), "not valid JSON") {
		t.Errorf("corrupt state = %v; want an error saying so", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := d.Assemble(ctx, user("s", 1, "x")); !errors.Is(err, context.Canceled) {
		t.Errorf("canceled context = %v; want context.Canceled", err)
	}
}

func TestStats(t *testing.T) {
	a := newAsm(t, []skill.Skill{
		sk("big", triggers("go"), body(strings.Repeat("x", 50), "sha256:big")),
		sk("b"), sk("c"),
	}, skillface.WithBodyBytes(10), skillface.WithListingEntries(2))
	assemble(t, a, user("s", 1, "go"))
	assemble(t, a, user("s", 2, "hi"))
	assemble(t, a, skillface.Request{Restricted: true})
	want := skillface.Stats{Assembles: 3, Restricted: 1, Activations: 1, BodyRenders: 1, CacheHits: 1, Truncations: 4, SkippedWrites: 1}
	if got := a.Stats(); got != want {
		t.Errorf("Stats() = %+v; want %+v", got, want)
	}
}

func TestResponseJSON(t *testing.T) {
	a := newAsm(t, []skill.Skill{sk("one", triggers("go"), allowed("Bash(git:*)"))})
	req := user("s", 1, "go")
	req.Tools = []string{"Bash"}
	b, err := json.Marshal(assemble(t, a, req))
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{`"messages":`, `"tools":["Bash"]`, `"tool_limits":[{"tool":"Bash","allow":["git:*"]}]`,
		`"activated":["one"]`, `"triggered":["one"]`, `"active":["one"]`, `"counts":{"entries_truncated":0`} {
		if !strings.Contains(string(b), key) {
			t.Errorf("response JSON lacks %s:\n%s", key, b)
		}
	}
	var back skillface.Request
	if err := json.Unmarshal([]byte(`{"session_id":"s","round":2,"restricted":true,"messages":[{"role":"user","content":"x"}],"work_files":["a"],"tools":["t"],"mounts":["m"]}`), &back); err != nil {
		t.Fatal(err)
	}
	if want := (skillface.Request{SessionID: "s", Round: 2, Restricted: true, Messages: []skillface.Message{{"user", "x"}},
		WorkFiles: []string{"a"}, Tools: []string{"t"}, Mounts: []string{"m"}}); !reflect.DeepEqual(back, want) {
		t.Errorf("request JSON decoded to %+v; want %+v", back, want)
	}
}

// TestHotReloadWhileAssembling: skill updates and assembles run together
// (under -race); every response is consistent with some skill set.
func TestHotReloadWhileAssembling(t *testing.T) {
	a := newAsm(t, []skill.Skill{sk("stable", triggers("go")), sk("flaky", triggers("go"))}, skillface.WithMaxAttempts(10000))
	stop := make(chan struct{})
	updaterDone := make(chan struct{})
	go func() {
		defer close(updaterDone)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if i%2 == 0 {
				a.DeleteSkill("flaky")
			} else if err := a.PutSkill(sk("flaky", triggers("go"), body(fmt.Sprint("v", i), fmt.Sprint("sha256:", i)))); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range 200 {
				resp, err := a.Assemble(context.Background(), user(fmt.Sprint("s", w), int64(r+1), "go"))
				if err != nil {
					t.Error(err)
					return
				}
				if !slices.Contains(resp.Active, "stable") || len(resp.Messages) != 2+1+len(resp.Active) {
					t.Errorf("inconsistent response: active %q, %d messages", resp.Active, len(resp.Messages))
					return
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	<-updaterDone
}
