package skillface_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/skillbus/skillbus/pkg/skill"
	"github.com/skillbus/skillbus/pkg/skillface"
)

// checkResponseJSON asserts that AppendResponseJSON gives exactly the bytes
// of json.Marshal.
func checkResponseJSON(t *testing.T, a *skillface.Assembler, resp *skillface.Response) {
	t.Helper()
	want, err := json.Marshal(resp)
	if err != nil {
		t.Fatal(err)
	}
	if got := a.AppendResponseJSON(nil, resp); string(got) != string(want) {
		t.Fatalf("AppendResponseJSON =\n%s\njson.Marshal =\n%s", got, want)
	}
}

// TestResponseJSONFields: AppendResponseJSON writes every field of Response
// (and of the types in it) by hand; a field added to them must be added
// there too. This test lists the JSON names it knows.
func TestResponseJSONFields(t *testing.T) {
	for typ, want := range map[reflect.Type]string{
		reflect.TypeFor[skillface.Response]():  "messages tools tool_limits,omitempty activated,omitempty triggered,omitempty active,omitempty dropped,omitempty counts",
		reflect.TypeFor[skillface.Message]():   "role content",
		reflect.TypeFor[skillface.ToolLimit](): "tool allow,omitempty deny,omitempty",
		reflect.TypeFor[skillface.Counts]():    "entries_truncated entries_dropped bodies_truncated bodies_dropped session_overflow",
	} {
		var tags []string
		for f := range typ.Fields() {
			tags = append(tags, f.Tag.Get("json"))
		}
		if got := strings.Join(tags, " "); got != want {
			t.Errorf("%s JSON fields = %q; AppendResponseJSON (json.go) writes %q: update it", typ, got, want)
		}
	}
}

// TestResponseJSONShapes compares AppendResponseJSON with json.Marshal on
// hand-made responses: nil and empty slices, tool limits, every kind of
// character that encoding/json escapes.
func TestResponseJSONShapes(t *testing.T) {
	a := newAsm(t, nil)
	odd := "quote \" backslash \\ <b>&amp;</b> \x00\x01\x1f\x7f \b\f\n\r\t é 漢 😀 \u2028\u2029 bad \xff\xc3 end"
	for _, resp := range []skillface.Response{
		{},
		{Messages: []skillface.Message{}, Tools: []string{}},
		{Messages: []skillface.Message{{Role: odd, Content: odd}, {}}, Tools: []string{odd, ""},
			ToolLimits: []skillface.ToolLimit{{Tool: "Bash", Allow: []string{"git:*"}}, {Tool: odd, Deny: []string{odd}}, {Tool: "x", Allow: []string{}, Deny: []string{"d"}}},
			Activated:  []string{"a"}, Triggered: []string{"t", odd}, Active: []string{"a"}, Dropped: []string{"d"},
			Counts: skillface.Counts{EntriesTruncated: 1, EntriesDropped: -2, BodiesTruncated: 3, BodiesDropped: 4, SessionOverflow: 1 << 40}},
		{Activated: []string{}, Dropped: []string{}},
	} {
		checkResponseJSON(t, a, &resp)
	}
}

// TestResponseJSONAssembled compares AppendResponseJSON with json.Marshal on
// responses of Assemble whose listing and bodies hold characters that must
// be escaped, with a session overflow (a listing built per call) and after
// a skill changed (a stale cached body must not be used).
func TestResponseJSONAssembled(t *testing.T) {
	weird := "<script>\"x\" & y</script>\n\ttab \u2028 é"
	a := newAsm(t, []skill.Skill{
		sk("a", triggers("go"), body("# A "+weird+"\n", "sha256:a1"), func(s *skill.Skill) { s.Description = weird }),
		sk("b", triggers("go"), body("# B\n", "sha256:b1"), allowed("Bash(git:*)")),
		sk("c", triggers("go"), body("# C "+weird, "sha256:c1")),
	}, skillface.WithSessionBodies(2))
	for round := int64(1); round <= 3; round++ {
		resp := assemble(t, a, user("s", round, "go "+weird))
		if round == 1 && resp.Counts.SessionOverflow == 0 {
			t.Fatalf("want a session overflow in round 1: %+v", resp.Counts)
		}
		checkResponseJSON(t, a, &resp)
		if round == 2 {
			if err := a.PutSkill(sk("a", triggers("go"), body("# A v2 "+weird, "sha256:a2"))); err != nil {
				t.Fatal(err)
			}
			checkResponseJSON(t, a, &resp) // the old body is no longer cached
		}
	}
}

// FuzzAppendResponseJSON: any strings in any field encode as json.Marshal
// encodes them.
func FuzzAppendResponseJSON(f *testing.F) {
	f.Add("role", "content \" \\ <>& \x00 \u2028 \xff", "tool")
	f.Add("", "", "")
	f.Fuzz(func(t *testing.T, role, content, tool string) {
		a := newAsm(t, nil)
		resp := skillface.Response{Messages: []skillface.Message{{Role: role, Content: content}}, Tools: []string{tool},
			ToolLimits: []skillface.ToolLimit{{Tool: tool, Allow: []string{content}}}, Active: []string{role}}
		checkResponseJSON(t, a, &resp)
	})
}
