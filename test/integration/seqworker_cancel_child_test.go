package integration

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/skillbus/skillbus/internal/builtin"
	"github.com/skillbus/skillbus/internal/natsserver"
	"github.com/skillbus/skillbus/internal/seqworker"
	"github.com/skillbus/skillbus/pkg/client"
	"github.com/skillbus/skillbus/pkg/events"
)

// alive reports whether process pid runs (a zombie waiting to be reaped
// counts as gone).
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return !errors.Is(err, os.ErrNotExist)
	}
	// pid (comm) STATE ...: comm may hold spaces, the state follows the
	// last ')'.
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] != 'Z'
	}
	return true
}

// TestSeqworkerCancelKillsCommand: cancelling a run whose group runs
// `cmd.run` (a shell that started `sleep 60` in the background and waits
// for it) reaches the tool provider: the call's context is cancelled and
// cmd.run kills the command's whole process group, so the sleep — a
// grandchild of the provider — is gone within a couple of seconds, not at
// the call's 2-minute deadline.
func TestSeqworkerCancelKillsCommand(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("needs /proc to tell a running process from a zombie")
	}
	t.Parallel()
	env := swStart(t, natsserver.Options{}, swOptions())
	root := t.TempDir()
	p, err := builtin.New(builtin.Config{Root: root, AllowCommands: []string{"sh"}, CommandTimeout: 2 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	swServe(t, env, p.Tools()...)
	swStore(t, env, `
name: cx-cmd
groups:
  - name: cx-cmd-sleep
    timeout: 2m
    tools:
      - tool: cmd.run
        args: {command: sh, args: ["-c", "sleep 60 & echo $! > sleep.pid; wait"], timeout: 2m}
`)
	swWorker(t, env, seqworker.Config{WorkerID: "cx-cmd-worker"})
	c, err := client.New(env.nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	id, err := c.Start(ctx, events.SeqRunRequest{RunID: "r-cx-cmd", Sequence: "cx-cmd"})
	if err != nil {
		t.Fatal(err)
	}
	var pid int
	for pid == 0 {
		if b, err := os.ReadFile(filepath.Join(root, "sleep.pid")); err == nil {
			pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		}
		if ctx.Err() != nil {
			t.Fatal("the command never started")
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	if !alive(pid) {
		t.Fatalf("sleep (pid %d) is not running before the cancel", pid)
	}
	cancelled := time.Now()
	if _, err := c.Cancel(ctx, id, "test", "stop the sleep"); err != nil {
		t.Fatal(err)
	}
	for alive(pid) {
		if time.Since(cancelled) > 10*time.Second {
			t.Fatalf("sleep (pid %d) still runs %v after the run was cancelled; want it killed with its process group", pid, time.Since(cancelled).Round(time.Millisecond))
		}
		time.Sleep(10 * time.Millisecond)
	}
	gone := time.Since(cancelled)
	t.Logf("the command's child was gone %v after the cancel", gone.Round(time.Millisecond))
	if gone > 3*time.Second {
		t.Errorf("the command's child was gone only %v after the cancel; want within a second or two", gone)
	}
	st, err := c.Wait(ctx, id, client.WaitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if st.Status != events.StatusCancelled {
		t.Errorf("run %s ended %s (%s); want cancelled", id, st.Status, st.Error)
	}
}
