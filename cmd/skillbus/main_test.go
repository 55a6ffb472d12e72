package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// syncBuffer is a bytes.Buffer safe for the signal goroutine and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestSecondSignalForcesExit(t *testing.T) {
	sigs := make(chan os.Signal, 2)
	var stderr syncBuffer
	exited := make(chan int, 1)
	ctx := interruptible(context.Background(), sigs, &stderr, func(code int) { exited <- code })
	sigs <- os.Interrupt
	select {
	case <-ctx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("context not done after the first signal")
	}
	select {
	case code := <-exited:
		t.Fatalf("exit(%d) after the first signal; want a graceful stop", code)
	case <-time.After(50 * time.Millisecond):
	}
	sigs <- syscall.SIGTERM
	select {
	case code := <-exited:
		if code != 1 {
			t.Errorf("exit(%d) after the second signal; want exit(1)", code)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no exit after the second signal")
	}
	if got := stderr.String(); !strings.Contains(got, "forced exit") {
		t.Errorf("stderr = %q; want it to say forced exit", got)
	}
}

// TestDevSecondSignal runs the real command: `skillbus dev` with a run whose
// cmd.run sleeps, so the first SIGTERM starts a stop that waits for the run;
// the second must end the process at once with exit code 1.
func TestDevSecondSignal(t *testing.T) {
	needSleep(t)
	dir := t.TempDir()
	bin := build(t)
	defs := filepath.Join(dir, "defs")
	os.MkdirAll(defs, 0o755)
	// A boot sequence, so the run starts with dev's own agent_ready.
	seqYAML := "name: nap\nboot: true\ngroups:\n  - name: nap\n    tools:\n      - tool: cmd.run\n        args: {command: sleep, args: [\"30\"]}\n"
	if err := os.WriteFile(filepath.Join(defs, "nap.seq.yaml"), []byte(seqYAML), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "dev", "--port", "0", "--dir", defs, "--data", filepath.Join(dir, "data"), "--tools-root", dir, "--allow-cmd", "sleep")
	var stdout, stderr syncBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	waitFor(t, func() bool { return strings.Contains(stdout.String(), "Press Ctrl-C") }, "dev to start", &stderr)
	// Let the boot run reach its sleep.
	var child int
	waitFor(t, func() bool { child = sleepingChild(cmd.Process.Pid); return child > 0 }, "the boot run's sleep to start", &stderr)
	// A forced exit leaves the child behind (an exit kills no children).
	t.Cleanup(func() { _ = syscall.Kill(child, syscall.SIGKILL) })
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-done:
		t.Fatalf("dev exited (%v) at the first SIGTERM with a run in flight; this test needs a slow stop\n%s", err, stderr.String())
	case <-time.After(500 * time.Millisecond):
	}
	start := time.Now()
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-done:
		if code := cmd.ProcessState.ExitCode(); code != 1 {
			t.Errorf("exit code %d (%v) after the second SIGTERM; want 1", code, err)
		}
		if took := time.Since(start); took > 2*time.Second {
			t.Errorf("exit %v after the second SIGTERM; want at once", took)
		}
		if !strings.Contains(stderr.String(), "forced exit") {
			t.Errorf("stderr does not say forced exit:\n%s", stderr.String())
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("dev still running 5 s after the second SIGTERM\n%s", stderr.String())
	}
}

// TestRunInterrupted interrupts an in-process `skillbus run` whose cmd.run
// sleeps: the process must exit within 2 s with code 1, its sleep killed.
func TestRunInterrupted(t *testing.T) {
	needSleep(t)
	dir := t.TempDir()
	bin := build(t)
	file := filepath.Join(dir, "nap.seq.yaml")
	if err := os.WriteFile(file, []byte("name: nap\ngroups:\n  - name: nap\n    tools:\n      - tool: cmd.run\n        args: {command: sleep, args: [\"20\"]}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "run", file, "--tools-root", dir, "--allow-cmd", "sleep")
	cmd.Env = append(os.Environ(), "NATS_URL=")
	var stdout, stderr syncBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	var child int
	waitFor(t, func() bool { child = sleepingChild(cmd.Process.Pid); return child > 0 }, "the run's sleep to start", &stderr)
	t.Cleanup(func() { _ = syscall.Kill(child, syscall.SIGKILL) })
	start := time.Now()
	_ = cmd.Process.Signal(os.Interrupt)
	select {
	case <-done:
		if took := time.Since(start); took > 2*time.Second {
			t.Errorf("skillbus run exited %v after Ctrl-C; want within 2 s", took)
		}
		if code := cmd.ProcessState.ExitCode(); code != 1 {
			t.Errorf("exit code %d after Ctrl-C; want 1", code)
		}
		if !strings.Contains(stderr.String(), "interrupted") {
			t.Errorf("stderr does not say interrupted:\n%s", stderr.String())
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("skillbus run still running 5 s after Ctrl-C\n%s", stderr.String())
	}
	// The sleep is gone (a zombie waiting for init counts as gone).
	if out, err := exec.Command("ps", "-o", "stat=", "-p", strconv.Itoa(child)).Output(); err == nil && !strings.HasPrefix(strings.TrimSpace(string(out)), "Z") {
		t.Errorf("cmd.run's sleep (pid %d) still runs after skillbus run exited (state %s)", child, bytes.TrimSpace(out))
	}
}

var (
	buildOnce sync.Once
	buildBin  string
	buildErr  error
	buildDir  string
)

// build builds the command once per test binary and returns its path.
func build(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs the command")
	}
	buildOnce.Do(func() {
		if buildDir, buildErr = os.MkdirTemp("", "skillbus-main-test-*"); buildErr != nil {
			return
		}
		buildBin = filepath.Join(buildDir, "skillbus")
		var out []byte
		if out, buildErr = exec.Command("go", "build", "-o", buildBin, ".").CombinedOutput(); buildErr != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", buildErr, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return buildBin
}

func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

func needSleep(t *testing.T) {
	t.Helper()
	for _, c := range []string{"sleep", "pgrep", "ps"} {
		if _, err := exec.LookPath(c); err != nil {
			t.Skipf("no %s command", c)
		}
	}
}

func waitFor(t *testing.T, ok func() bool, what string, stderr *syncBuffer) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if ok() {
			return
		}
	}
	t.Fatalf("timed out waiting for %s\n%s", what, stderr.String())
}

// sleepingChild returns the pid of a child of process pid running sleep,
// or 0.
func sleepingChild(pid int) int {
	out, err := exec.Command("pgrep", "-P", strconv.Itoa(pid), "sleep").Output()
	if err != nil {
		return 0
	}
	n, _ := strconv.Atoi(strings.Fields(string(out))[0])
	return n
}
