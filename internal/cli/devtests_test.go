package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// lineWriter collects what is written and signals each write.
type lineWriter struct {
	mu    sync.Mutex
	b     strings.Builder
	wrote chan struct{}
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	w.b.Write(p)
	w.mu.Unlock()
	select {
	case w.wrote <- struct{}{}:
	default:
	}
	return len(p), nil
}

// waitFor waits until the output holds want, after each write.
func (w *lineWriter) waitFor(t *testing.T, want string) {
	t.Helper()
	deadline := time.NewTimer(30 * time.Second)
	defer deadline.Stop()
	for {
		w.mu.Lock()
		got := w.b.String()
		w.mu.Unlock()
		if strings.Contains(got, want) {
			return
		}
		select {
		case <-w.wrote:
		case <-deadline.C:
			t.Fatalf("no %q in 30 s; output:\n%s", want, got)
		}
	}
}

// skillbus dev runs the tests once at the start and again when a
// definition or a test file changes, one result line each.
func TestDevRerunsTests(t *testing.T) {
	dir := writeTestTree(t, "cases:\n  - name: a\n    mocks: {t.x: {result: {a: 1}}}\n    expect: {slots: {x: {a: 1}}}\n")
	skills := writeSkillTree(t, "cases:\n  - {name: s, message: deploy, expect: {skills: {deploy: activated}}}\n")
	root := filepath.Dir(skills)
	if err := os.Rename(dir, filepath.Join(root, "seqs")); err != nil {
		t.Fatal(err)
	}
	dir = filepath.Join(root, "seqs")
	w := &lineWriter{wrote: make(chan struct{}, 1)}
	stop := watchTests(context.Background(), w, root, 10*time.Millisecond)
	defer stop()
	seqTests := filepath.Join(dir, "one.test.yaml")
	w.waitFor(t, "skillbus dev: tests "+seqTests+": 1 passed, 0 failed\n")
	w.waitFor(t, "skillbus dev: tests "+filepath.Join(skills, "skill.test.yaml")+": 1 passed, 0 failed\n")

	// The sequence changes: a second group reads the slot x as a string,
	// so the run fails and the case with it.
	seqText := "name: one\ngroups:\n  - name: g\n    out: {x: object}\n    timeout: 1m\n    tools:\n      - {tool: t.x, as: x}\n" +
		"  - name: h\n    in: {x: string}\n    out: {w: object}\n    timeout: 1m\n    tools:\n      - {tool: t.x, as: w}\n"
	if err := os.WriteFile(filepath.Join(dir, "one.seq.yaml"), []byte(seqText), 0o644); err != nil {
		t.Fatal(err)
	}
	w.waitFor(t, "skillbus dev: tests "+seqTests+": 0 passed, 1 failed\n")
	w.waitFor(t, "--- FAIL: "+seqTests+":2: a: ")

	// Its slot is renamed y: the test file names a slot the sequence
	// lacks, a problem of the file at its line.
	seqText = "name: one\ngroups:\n  - name: g\n    out: {y: object}\n    timeout: 1m\n    tools:\n      - {tool: t.x, as: y}\n"
	if err := os.WriteFile(filepath.Join(dir, "one.seq.yaml"), []byte(seqText), 0o644); err != nil {
		t.Fatal(err)
	}
	w.waitFor(t, "skillbus dev: tests "+seqTests+`:4: case "a": expect: the sequence one has no slot "x" (did you mean "y"?)`)

	// The skill's trigger changes: its test fails.
	md := filepath.Join(skills, "SKILL.md")
	if err := os.WriteFile(md, []byte("---\nname: deploy\ndescription: Deploys.\ntriggers: [ship]\n---\n# Deploy\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	w.waitFor(t, "skillbus dev: tests "+filepath.Join(skills, "skill.test.yaml")+": 0 passed, 1 failed\n")

	// A test file that breaks prints its parse error.
	if err := os.WriteFile(seqTests, []byte("cases:\n  - name: a\n    mockz: {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	w.waitFor(t, "skillbus dev: tests "+seqTests+":3: unknown case field \"mockz\"")
}
