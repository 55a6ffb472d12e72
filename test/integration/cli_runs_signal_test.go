package integration

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/skillbus/skillbus/internal/cli"
	"github.com/skillbus/skillbus/internal/seqworker"
	"github.com/skillbus/skillbus/pkg/client"
	"github.com/skillbus/skillbus/pkg/events"
)

// TestCLIRunsSignal: `runs show` says what a waiting run waits for and
// since when (-o json carries it); `runs signal` reads values as `run`
// reads arguments (a mistyped one is a usage error, exit 2, before
// anything is sent), refuses a wrong name (exit 1) before it looks at
// the values, with did-you-mean, delivers the signal
// (exit 0) and the run resumes; `runs --status waiting` lists waiting runs;
// --reject fails the group with its reason.
func TestCLIRunsSignal(t *testing.T) {
	env, calls, c := swWaitEnv(t)
	swStore(t, env, swWaitDef("cs", "1h", "abort"))
	swWorker(t, env, seqworker.Config{})
	t.Setenv(cli.EnvNATSURL, env.srv.ClientURL())
	swRequest(t, env, "cs-1", "cs", map[string]any{"svc": "db"})
	swRequest(t, env, "cs-2", "cs", map[string]any{"svc": "web"})
	swWaitStatus(t, env, "cs-1", events.StatusWaiting, 20*time.Second)
	swWaitStatus(t, env, "cs-2", events.StatusWaiting, 20*time.Second)

	code, out, errOut := cliRun(t, "runs", "show", "cs-1")
	if code != 0 || !strings.Contains(out, `Waiting:`) || !strings.Contains(out, `for the signal "approve" with (note: string, ok: bool), since`) || !strings.Contains(out, "skillbus runs signal cs-1 approve") || !strings.Contains(out, "none holds it while it waits") {
		t.Fatalf("runs show = %d\n%s\n%s", code, out, errOut)
	}
	code, out, _ = cliRun(t, "runs", "show", "cs-1", "-o", "json")
	var st events.RunState
	if code != 0 || json.Unmarshal([]byte(out), &st) != nil || st.Wait == nil || st.Wait.Signal != "approve" || st.Wait.Since.IsZero() {
		t.Fatalf("runs show -o json = %d %s", code, out)
	}
	if code, out, _ := cliRun(t, "runs", "--status", "waiting"); code != 0 || !strings.Contains(out, "cs-1") || !strings.Contains(out, `waiting (signal "approve" since `) {
		t.Fatalf("runs --status waiting = %d\n%s", code, out)
	}
	code, out, _ = cliRun(t, "runs", "--status", "waiting", "-o", "json")
	var page events.SeqListReply
	if code != 0 || json.Unmarshal([]byte(out), &page) != nil || len(page.Runs) != 2 || !strings.HasPrefix(page.Runs[0].Waiting, `signal "approve" since `) {
		t.Fatalf("runs --status waiting -o json = %d %s", code, out)
	}
	if code, _, errOut := cliRun(t, "runs", "signal", "cs-1", "approve", "--arg", "ok=yes", "--arg", "note=x"); code != 2 || !strings.Contains(errOut, "ok") {
		t.Fatalf("mistyped value: %d %s", code, errOut)
	}
	if code, _, errOut := cliRun(t, "runs", "signal", "cs-1", "deploy", "--arg", "ok=true", "--arg", "note=x"); code != 1 || !strings.Contains(errOut, `for the signal "approve", not "deploy"`) {
		t.Fatalf("wrong name: %d %s", code, errOut)
	}
	// A wrong name is said before the values are checked, with the name
	// the run waits for offered when it is near.
	if code, _, errOut := cliRun(t, "runs", "signal", "cs-1", "aprove", "--arg", "ok=yes"); code != 1 || !strings.Contains(errOut, `for the signal "approve", not "aprove" (did you mean "approve"?)`) {
		t.Fatalf("wrong name and wrong values: %d %s", code, errOut)
	}
	if code, _, errOut := cliRun(t, "runs", "signal", "cs-1", "approve", "--arg", "ok=true", "--arg", "note=go ahead", "--by", "ann"); code != 0 || !strings.Contains(errOut, "signalled") {
		t.Fatalf("signal: %d %s", code, errOut)
	}
	if st := swWait(t, env, "cs-1", 20*time.Second); st.Status != events.StatusSucceeded || !strings.Contains(string(st.Slots["done"]), `"note":"go ahead"`) {
		t.Fatalf("after the signal: %s %s", st.Status, st.Slots["done"])
	}
	if code, _, errOut := cliRun(t, "runs", "signal", "cs-1", "approve", "--arg", "ok=true", "--arg", "note=x"); code != 1 || !strings.Contains(errOut, "not waiting") {
		t.Fatalf("signal to a finished run: %d %s", code, errOut)
	}
	// A rejection's reason of only spaces is refused by the CLI (exit 2)
	// and by seq.signal for every client (400), and the run keeps waiting.
	if code, _, errOut := cliRun(t, "runs", "signal", "cs-2", "approve", "--reject", "   "); code != 2 || !strings.Contains(errOut, "needs a reason") {
		t.Fatalf("reject with a blank reason: %d %s", code, errOut)
	}
	if _, err := c.Signal(context.Background(), "cs-2", "approve", nil, client.WithReject(" \t ")); !errors.Is(err, client.ErrBadRequest) || !strings.Contains(err.Error(), "a rejection needs a reason") {
		t.Fatalf("seq.signal of a rejection with a blank reason = %v; want 400 asking for a reason", err)
	}
	if st, _ := swState(t, env, "cs-2"); st.Status != events.StatusWaiting || st.Wait == nil || st.Wait.Signalled != nil {
		t.Fatalf("after the blank rejections cs-2 is %s, signalled %+v; want still waiting", st.Status, st.Wait)
	}
	if code, _, errOut := cliRun(t, "runs", "signal", "cs-2", "approve", "--reject", "not during the freeze"); code != 0 || !strings.Contains(errOut, "rejected") {
		t.Fatalf("reject: %d %s", code, errOut)
	}
	if st := swWait(t, env, "cs-2", 20*time.Second); st.Status != events.StatusFailed || !strings.Contains(st.Error, "not during the freeze") {
		t.Fatalf("after the rejection: %s %s", st.Status, st.Error)
	}
	code, out, _ = cliRun(t, "runs", "show", "cs-2")
	if code != 0 || !strings.Contains(out, `signal "approve" since`) || !strings.Contains(out, "rejected by") {
		t.Fatalf("runs show of the rejected run:\n%s", out)
	}
	if n := calls.get("wt.act"); n != 1 {
		t.Fatalf("wt.act called %d times; want 1", n)
	}
}
