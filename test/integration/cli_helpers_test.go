package integration

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skillbus/skillbus/internal/builtin"
	"github.com/skillbus/skillbus/internal/cli"
	"github.com/skillbus/skillbus/internal/devstack"
)

// cliWaitBound bounds a wait on a command's output (cliBuf.waitUntil): only
// a failing test ever waits it out.
const cliWaitBound = 60 * time.Second

// cliBuf is a bytes.Buffer safe for a command writing while the test
// reads; waitFor wakes at each write instead of polling.
type cliBuf struct {
	mu      sync.Mutex // mu guards b and written
	b       bytes.Buffer
	written chan struct{} // closed by the next Write; nil until waitFor asks
}

func (b *cliBuf) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.written != nil {
		close(b.written)
		b.written = nil
	}
	return b.b.Write(p)
}

// waitFor waits until the text written contains each of want (waitUntil)
// and fails t naming what and the first one missing otherwise.
func (b *cliBuf) waitFor(t *testing.T, what string, want ...string) {
	t.Helper()
	missing := ""
	b.waitUntil(t, what, func(text string) bool {
		for _, w := range want {
			if !strings.Contains(text, w) {
				missing = w
				return false
			}
		}
		return true
	}, func() string { return fmt.Sprintf("no %q", missing) })
}

// waitUntil waits until cond holds for the text written, checking it now
// and at each write (not on a clock), up to cliWaitBound — a bound for a
// loaded machine, not a time the command must meet — and fails t naming
// what and the text otherwise (with why's words, when given, before it).
func (b *cliBuf) waitUntil(t *testing.T, what string, cond func(text string) bool, why ...func() string) {
	t.Helper()
	timeout := time.NewTimer(cliWaitBound)
	defer timeout.Stop()
	for {
		b.mu.Lock()
		text := b.b.String()
		if b.written == nil {
			b.written = make(chan struct{})
		}
		next := b.written
		b.mu.Unlock()
		if cond(text) {
			return
		}
		select {
		case <-next:
		case <-timeout.C:
			reason := "not there"
			if len(why) > 0 {
				reason = why[0]()
			}
			t.Fatalf("%s: %s within %s in:\n%s", what, reason, cliWaitBound, text)
		}
	}
}

func (b *cliBuf) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// cliRun runs the skillbus command line in-process and returns its exit
// code, stdout and stderr.
func cliRun(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var out, errb cliBuf
	code := cli.Main(ctx, args, strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

// cliBackground runs a long-running command (dev, tools serve, mcp, watch)
// until the returned stop function cancels it; stop returns its exit code.
func cliBackground(t *testing.T, args ...string) (stdout, stderr *cliBuf, stop func() int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	stdout, stderr = &cliBuf{}, &cliBuf{}
	done := make(chan int, 1)
	go func() { done <- cli.Main(ctx, args, strings.NewReader(""), stdout, stderr) }()
	var once sync.Once
	code := -1
	stop = func() int {
		once.Do(func() {
			cancel()
			select {
			case code = <-done:
			case <-time.After(30 * time.Second):
				t.Errorf("skillbus %s did not stop within 30 s of Ctrl-C", strings.Join(args, " "))
			}
		})
		return code
	}
	t.Cleanup(func() { stop() })
	return stdout, stderr, stop
}

// cliEventually polls cond every 50 ms until it holds or 20 s pass.
func cliEventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// cliProject writes a small project to survey: two Go files with a TODO
// and a FIXME, a README, a manifest, a hidden dir, and a secret beside
// the project (outside the tools' root).
func cliProject(t *testing.T) string {
	t.Helper()
	base := t.TempDir()
	root := filepath.Join(base, "project")
	for name, text := range map[string]string{
		"secret.txt":                 "outside the root\n",
		"project/README.md":          "# Widget\n\nWidgets for everyone.\n",
		"project/go.mod":             "module example.com/widget\n\ngo 1.26\n",
		"project/main.go":            "package main\n\n// TODO: parse flags\nfunc main() {}\n",
		"project/internal/w/w.go":    "package w\n\n// FIXME: too slow\nfunc W() int { return 1 }\n",
		"project/docs/guide.md":      "# Guide\n\nRead me.\n",
		"project/.git/HEAD":          "ref: refs/heads/main\n",
		"project/web/app.ts":         "export const x = 1;\n",
		"project/internal/w/data.md": "plain\n",
	} {
		p := filepath.Join(base, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// cliRepoFile returns the path of a file of this repository.
func cliRepoFile(t *testing.T, rel string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("..", "..", filepath.FromSlash(rel)))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// cliStack starts the in-process stack with the registry on dir (may be "")
// and the built-in tools on toolsRoot (may be ""), and points NATS_URL at it.
func cliStack(t *testing.T, dir, toolsRoot string) *devstack.Stack {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := devstack.Start(ctx, devstack.Config{DataDir: t.TempDir(), Dir: dir, Tools: builtin.Config{Root: toolsRoot, AllowCommands: nil}})
	if err != nil {
		t.Fatalf("devstack.Start: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		if err := s.Stop(ctx); err != nil {
			t.Errorf("stack Stop: %v", err)
		}
	})
	t.Setenv(cli.EnvNATSURL, s.URL())
	return s
}

// cliCopy copies a repository file into dir.
func cliCopy(t *testing.T, rel, dir string) {
	t.Helper()
	b, err := os.ReadFile(cliRepoFile(t, rel))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, filepath.Base(rel)), b, 0o644); err != nil {
		t.Fatal(err)
	}
}
