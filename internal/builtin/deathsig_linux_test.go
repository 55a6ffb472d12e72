//go:build linux

package builtin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// envDeathsigHelper makes the test binary act as a provider running one
// long cmd.run (TestCommandDiesWithProvider starts it).
const envDeathsigHelper = "SKILLBUS_TEST_DEATHSIG_ROOT"

// TestCommandDiesWithProvider: a provider process killed with SIGKILL —
// no chance to cancel its calls — takes the command it was running with
// it, instead of leaving it running while the resumed run starts it again.
// The provider is this test binary run again (envDeathsigHelper); its
// command is `sh -c 'echo $$ > pid; exec sleep 60'`, the sleep keeping the
// shell's pid, a direct child of the provider. (Before, the sleep ran on,
// reparented to init, for its whole 60 s.)
func TestCommandDiesWithProvider(t *testing.T) {
	if root := os.Getenv(envDeathsigHelper); root != "" {
		p, err := New(Config{Root: root, AllowCommands: []string{"sh"}, CommandTimeout: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		args, _ := json.Marshal(RunArgs{Command: "sh", Args: []string{"-c", "echo $$ > pid; exec sleep 60"}})
		_, err = p.run(context.Background(), args)
		t.Fatalf("the command ended before the provider was killed: %v", err)
	}
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("needs /proc to tell a running process from a zombie")
	}
	root := t.TempDir()
	helper := exec.Command(os.Args[0], "-test.run=^TestCommandDiesWithProvider$", "-test.count=1")
	helper.Env = append(os.Environ(), envDeathsigHelper+"="+root)
	if err := helper.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = helper.Wait(); close(done) }()
	defer func() { _ = helper.Process.Kill() }()

	var pid int
	deadline := time.Now().Add(60 * time.Second)
	for pid == 0 && time.Now().Before(deadline) {
		b, _ := os.ReadFile(filepath.Join(root, "pid"))
		pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		time.Sleep(20 * time.Millisecond)
	}
	if pid == 0 {
		t.Fatal("the helper provider never started its command")
	}
	defer func() { _ = syscall.Kill(pid, syscall.SIGKILL) }()
	time.Sleep(100 * time.Millisecond) // the shell has exec'd sleep
	if !procAlive(pid) {
		t.Fatalf("the command %d is not running before the provider is killed", pid)
	}
	if err := helper.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-done
	start := time.Now()
	for procAlive(pid) {
		if time.Since(start) > 10*time.Second {
			t.Fatalf("the command %d still runs %s after its provider was SIGKILLed", pid, time.Since(start).Round(time.Millisecond))
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Logf("the command was gone %s after its provider was SIGKILLed", time.Since(start).Round(time.Millisecond))
}

// procAlive reports whether process pid runs (a zombie counts as gone).
func procAlive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return !errors.Is(err, os.ErrNotExist)
	}
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] != 'Z'
	}
	return true
}
