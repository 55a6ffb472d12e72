package integration

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/skillbus/skillbus/internal/cli"
	"github.com/skillbus/skillbus/internal/natsserver"
	"github.com/skillbus/skillbus/internal/seqworker"
	"github.com/skillbus/skillbus/pkg/client"
	"github.com/skillbus/skillbus/pkg/events"
	"github.com/skillbus/skillbus/pkg/tool"
)

// TestCLIRunsCancelAndRerun: `runs cancel` and `runs rerun` look at the
// state they act on (docs/runs.md, Cancel; List, show, rerun): a running
// run is cancelled (exit 0) and cancelling it again says it already was
// (exit 0); cancelling a succeeded run says it already finished, with its
// status (exit 1); a rerun onto the run's own id is a usage error (exit 2)
// and refused by the worker too; a rerun of an unknown id, or of a run
// whose sequence is gone, names the run. No message carries Go package
// prefixes ("client: not found").
func TestCLIRunsCancelAndRerun(t *testing.T) {
	env := swStart(t, natsserver.Options{}, swOptions())
	entered := make(chan struct{}, 4)
	release := make(chan struct{})
	defer close(release)
	swServe(t, env, swEcho("cr.echo", nil), tool.Tool{Name: "cr.block", Func: func(ctx context.Context, args json.RawMessage) (any, error) {
		entered <- struct{}{}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-release:
			return args, nil
		}
	}})
	swStore(t, env, "name: cr-block\ngroups:\n  - name: cr-block-1\n    tools: [{tool: cr.block}]\n  - name: cr-block-2\n    tools: [{tool: cr.echo}]\n")
	swStore(t, env, "name: cr-quick\ngroups:\n  - name: cr-quick-1\n    tools: [{tool: cr.echo}]\n")
	swWorker(t, env, seqworker.Config{})
	t.Setenv(cli.EnvNATSURL, env.srv.ClientURL())
	c, err := client.New(env.nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	noGo := func(what, text string) {
		t.Helper()
		for _, p := range []string{"client: ", "events: ", "seqworker: "} {
			if strings.Contains(text, p) {
				t.Errorf("%s: %q carries the Go prefix %q", what, text, p)
			}
		}
	}

	// A running run: cancelled, then cancelled again.
	if _, err := c.Start(ctx, events.SeqRunRequest{RunID: "cr-run", Sequence: "cr-block"}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-entered:
	case <-ctx.Done():
		t.Fatal("the run never reached its blocking call")
	}
	code, out, errOut := cliRun(t, "runs", "cancel", "cr-run", "--reason", "not wanted")
	if code != cli.ExitOK || !strings.Contains(out, "run cr-run cancelled before any group finished") {
		t.Fatalf("runs cancel of a running run: exit %d\n%s\n%s\nwant 0, cancelled before any group finished", code, out, errOut)
	}
	code, out, errOut = cliRun(t, "runs", "cancel", "cr-run")
	if code != cli.ExitOK || !strings.Contains(out, "run cr-run was already cancelled at ") || !strings.Contains(out, "not wanted") {
		t.Errorf("runs cancel of a cancelled run: exit %d\n%s\n%s\nwant 0 saying it was already cancelled, and why", code, out, errOut)
	}

	// A succeeded run cannot be cancelled: its status is said, exit 1.
	if _, err := c.Start(ctx, events.SeqRunRequest{RunID: "cr-done", Sequence: "cr-quick"}); err != nil {
		t.Fatal(err)
	}
	if st, err := c.Wait(ctx, "cr-done", client.WaitOptions{Poll: 50 * time.Millisecond}); err != nil || st.Status != events.StatusSucceeded {
		t.Fatalf("cr-done: %v %+v", err, st)
	}
	code, out, errOut = cliRun(t, "runs", "cancel", "cr-done")
	if code != cli.ExitFailure || out != "" || !strings.Contains(errOut, "run cr-done already finished: succeeded at ") || !strings.Contains(errOut, "(1 of 1 groups finished)") {
		t.Errorf("runs cancel of a succeeded run: exit %d\n%s\n%s\nwant 1 saying it already finished, succeeded", code, out, errOut)
	}
	noGo("runs cancel of a succeeded run", errOut)
	if st, _ := swState(t, env, "cr-done"); st.Status != events.StatusSucceeded || st.Cancel != nil {
		t.Errorf("cr-done after the refused cancel: %s, cancel %+v; want succeeded, untouched", st.Status, st.Cancel)
	}

	// Rerun: onto its own id, of an unknown id, of a run whose sequence is gone.
	code, out, errOut = cliRun(t, "runs", "rerun", "cr-done", "--run-id", "cr-done")
	if code != cli.ExitUsage || out != "" || !strings.Contains(errOut, "--run-id cr-done is the run to rerun") {
		t.Errorf("runs rerun onto its own id: exit %d\n%s\n%s\nwant 2 naming --run-id", code, out, errOut)
	}
	if _, err := c.Rerun(ctx, "cr-done", "cr-done"); !errors.Is(err, client.ErrInvalid) || !strings.Contains(err.Error(), "is the run to rerun") {
		t.Errorf("seq.rerun onto its own id: %v; want ErrInvalid (found by the client) saying so", err)
	}
	code, out, errOut = cliRun(t, "runs", "rerun", "cr-nope")
	if code != cli.ExitFailure || out != "" || !strings.Contains(errOut, `no run "cr-nope"`) {
		t.Errorf("runs rerun of an unknown id: exit %d\n%s\n%s\nwant 1 naming cr-nope", code, out, errOut)
	}
	noGo("runs rerun of an unknown id", errOut)
	code, _, errOut = cliRun(t, "runs", "show", strings.Repeat("x", 5000))
	if code != cli.ExitUsage || strings.Contains(errOut, strings.Repeat("x", 100)) {
		t.Errorf("runs show with a 5,000-character id: exit %d, %q; want 2, without the id echoed in full", code, errOut)
	}
	kv, err := env.js.KeyValue(ctx, events.BucketSequences)
	if err != nil {
		t.Fatal(err)
	}
	if err := kv.Delete(ctx, events.KeyFor("cr-quick")); err != nil {
		t.Fatal(err)
	}
	cliEventually(t, "a rerun of a run whose sequence is gone to be refused", func() bool {
		code, out, errOut = cliRun(t, "runs", "rerun", "cr-done")
		return code != cli.ExitOK
	})
	if code != cli.ExitFailure || out != "" || !strings.Contains(errOut, `rerun of run "cr-done": `) || !strings.Contains(errOut, "cr-quick") {
		t.Errorf("runs rerun of a run whose sequence is gone: exit %d\n%s\n%s\nwant 1 naming the run and its sequence", code, out, errOut)
	}
	noGo("runs rerun of a run whose sequence is gone", errOut)
}
