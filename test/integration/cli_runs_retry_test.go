package integration

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skillbus/skillbus/internal/cli"
	"github.com/skillbus/skillbus/internal/natsserver"
	"github.com/skillbus/skillbus/internal/seqworker"
	"github.com/skillbus/skillbus/pkg/client"
	"github.com/skillbus/skillbus/pkg/events"
	"github.com/skillbus/skillbus/pkg/tool"
)

// TestCLIRunsRetryRunID: `runs retry RUN --run-id X` asked again, X
// existing, says that run X exists already and that it retries RUN (exit
// 0, X on stdout, nothing new started); an X taken by another run — a
// retry of another run, or a run of its own — is the conflict, saying
// what X is (exit 1), in the seqworker's 409 as every client gets it.
func TestCLIRunsRetryRunID(t *testing.T) {
	env := swStart(t, natsserver.Options{}, swOptions())
	var calls swCounter
	var broken atomic.Bool
	broken.Store(true)
	swServe(t, env, tool.Tool{Name: "crr.t", Func: func(ctx context.Context, args json.RawMessage) (any, error) {
		calls.add("crr.t")
		if broken.Load() {
			return nil, tool.Errorf("503", "down")
		}
		return map[string]bool{"ok": true}, nil
	}})
	swServe(t, env, swEcho("crr.a", &calls))
	swStore(t, env, "name: crr\ngroups:\n  - name: crr-a\n    tools: [{tool: crr.a}]\n  - name: crr-g\n    tools: [{tool: crr.t}]\n")
	swWorker(t, env, seqworker.Config{})
	t.Setenv(cli.EnvNATSURL, env.srv.ClientURL())
	for _, id := range []string{"crr-1", "crr-2"} {
		swRequest(t, env, id, "crr", nil)
		if st := swWait(t, env, id, 30*time.Second); st.Status != events.StatusFailed {
			t.Fatalf("%s: %s (%s); want failed", id, st.Status, st.Error)
		}
	}
	broken.Store(false)

	if code, out, errOut := cliRun(t, "runs", "retry", "crr-1", "--run-id", "crr-1b"); code != 0 || strings.TrimSpace(out) != "crr-1b" {
		t.Fatalf("runs retry = %d %q %q", code, out, errOut)
	}
	if st := swWait(t, env, "crr-1b", 30*time.Second); st.Status != events.StatusSucceeded {
		t.Fatalf("the retry: %s (%s)", st.Status, st.Error)
	}
	n := calls.get("crr.t")
	code, out, errOut := cliRun(t, "runs", "retry", "crr-1", "--run-id", "crr-1b")
	if code != 0 || strings.TrimSpace(out) != "crr-1b" || !strings.Contains(errOut, "run crr-1b exists already (it retries crr-1; succeeded)") || !strings.Contains(errOut, "nothing new was started") {
		t.Errorf("runs retry asked again = %d %q %q; want 0 saying run crr-1b exists already and retries crr-1", code, out, errOut)
	}
	code, _, errOut = cliRun(t, "runs", "retry", "crr-2", "--run-id", "crr-1b")
	if code != 1 || !strings.Contains(errOut, `run id "crr-1b" was already used for another run: it is a retry of "crr-1" (sequence "crr", succeeded, created `) {
		t.Errorf("runs retry with the id of another run's retry = %d %q; want 1 saying whose retry it is", code, errOut)
	}
	code, _, errOut = cliRun(t, "runs", "retry", "crr-2", "--run-id", "crr-1")
	if code != 1 || !strings.Contains(errOut, `run id "crr-1" was already used for another run: it is a run of the sequence "crr" (trigger manual, failed, created `) {
		t.Errorf("runs retry with the id of another run = %d %q; want 1 saying what that run is", code, errOut)
	}
	// The same retry, spelt with --from its first unfinished group, is
	// the one that exists; the same id from another group is the conflict.
	if code, _, errOut := cliRun(t, "runs", "retry", "crr-1", "--run-id", "crr-1b", "--from", "crr-g"); code != 0 || !strings.Contains(errOut, "exists already") {
		t.Errorf("runs retry --from the group the retry started at = %d %q; want 0, exists already", code, errOut)
	}
	code, _, errOut = cliRun(t, "runs", "retry", "crr-1", "--run-id", "crr-1b", "--from", "1")
	if code != 1 || !strings.Contains(errOut, `it is a retry of "crr-1" (sequence "crr", succeeded, created `) || !strings.Contains(errOut, "starting at group 2, and this retry starts at group 1") {
		t.Errorf("runs retry --from with the id of a retry from another group = %d %q; want 1 saying where each starts", code, errOut)
	}
	if got := calls.get("crr.t"); got != n {
		t.Errorf("crr.t called %d more times by the refused retries; want 0", got-n)
	}
	// The seqworker's own answer, for a client that does not look first.
	c, err := client.New(env.nc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Retry(context.Background(), "crr-2", "crr-1b", false); !errors.Is(err, client.ErrConflict) || !strings.Contains(err.Error(), `it is a retry of "crr-1" (sequence "crr", succeeded, created `) {
		t.Errorf("Retry with a taken id = %v; want a conflict saying the id is a retry of crr-1", err)
	}
	if id, err := c.Retry(context.Background(), "crr-1", "crr-1b", false); err != nil || id != "crr-1b" {
		t.Errorf("Retry asked again = %q, %v; want crr-1b, the run that exists", id, err)
	}
}
