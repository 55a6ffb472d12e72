package skillface_test

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skillbus/skillbus/pkg/skill"
	"github.com/skillbus/skillbus/pkg/skillface"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// TestConversation plays a five-turn conversation and checks the exact
// message list, tool surface and counts of every turn against
// testdata/conversation.golden (go test -run TestConversation -update
// rewrites it; review the diff).
func TestConversation(t *testing.T) {
	a := newAsm(t, []skill.Skill{
		sk("commit-helper", triggers("commit", "提交"), allowed("Read", "Bash(git add:*)", "Bash(git commit:*)"),
			body("# Commit\n\nStage with git add, then commit with a message in the imperative.\n", "sha256:c1"),
			func(s *skill.Skill) { s.WhenToUse = "The user wants to commit changes." }),
		sk("go-style", paths("**/*.go"), denied("WebFetch"),
			body("# Go style\n\nRun gofmt. Name things plainly.\n", "sha256:g1")),
		sk("release", invocation(skill.InvocationUserOnly), triggers("release"),
			body("# Release\n\nTag, build, publish.\n", "sha256:r1")),
		sk("secret-sauce", invocation(skill.InvocationModelOnly), triggers("sauce"),
			body("# Sauce\n\nA long recipe that goes on and on and on.\n", "sha256:s1")),
	}, skillface.WithSessionBodies(3), skillface.WithBodyBytes(40))

	tools := []string{"Read", "Write", "Bash", "WebFetch"}
	var convo []skillface.Message
	convo = append(convo, skillface.Message{Role: "system", Content: "You are a coding agent."})
	turns := []struct {
		say    string
		files  []string
		mounts []string
		edit   func()
	}{
		{say: "Hello! What can you do?"},
		{say: "Please commit my changes.", files: []string{"pkg/x/x.go"}},
		{say: "Thanks. Now the release, and add more sauce.", mounts: []string{"release"}},
		{say: "Did that work?", edit: func() {
			if err := a.PutSkill(sk("commit-helper", triggers("commit", "提交"), allowed("Read", "Bash(git commit:*)"),
				body("# Commit v2\n\nSign off.\n", "sha256:c2"))); err != nil {
				t.Fatal(err)
			}
			a.DeleteSkill("go-style")
		}},
		{say: "好的，请提交。"},
	}
	var out strings.Builder
	for i, turn := range turns {
		if turn.edit != nil {
			turn.edit()
		}
		convo = append(convo, skillface.Message{Role: "user", Content: turn.say})
		req := skillface.Request{SessionID: "conv", Round: int64(i + 1), Messages: convo,
			WorkFiles: turn.files, Tools: tools, Mounts: turn.mounts}
		resp := assemble(t, a, req)
		checkResponseJSON(t, a, &resp)
		fmt.Fprintf(&out, "=== turn %d: files %q mounts %q\n", i+1, turn.files, turn.mounts)
		for _, m := range resp.Messages {
			fmt.Fprintf(&out, "--- %s\n%s\n", m.Role, m.Content)
		}
		fmt.Fprintf(&out, "--- tools %q limits %+v\n--- activated %q triggered %q active %q dropped %q\n--- counts %+v\n\n",
			resp.Tools, resp.ToolLimits, resp.Activated, resp.Triggered, resp.Active, resp.Dropped, resp.Counts)
		convo = append(convo, skillface.Message{Role: "assistant", Content: fmt.Sprintf("(answer %d)", i+1)})
	}
	golden(t, "conversation.golden", out.String())
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if got != string(want) {
		gl, wl := strings.Split(got, "\n"), strings.Split(string(want), "\n")
		for i := range max(len(gl), len(wl)) {
			var g, w string
			if i < len(gl) {
				g = gl[i]
			}
			if i < len(wl) {
				w = wl[i]
			}
			if g != w {
				t.Fatalf("%s differs at line %d:\ngot  %q\nwant %q\n(run with -update and review the diff if the change is intended)", path, i+1, g, w)
			}
		}
	}
}
