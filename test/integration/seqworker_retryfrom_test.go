package integration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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

const swRetryFromSeq = `
name: rf
groups:
  - name: rf-fetch
    in: {n: integer}
    out: {x: object}
    tools: [{tool: rf.fetch, args: {n: $args.n}, as: x}]
  - name: rf-transform
    in: {x: object}
    out: {y: object}
    tools: [{tool: rf.transform, args: {x: $args.x}, as: y}]
  - name: rf-publish
    in: {y: object}
    out: {z: object}
    tools: [{tool: rf.publish, args: {y: $args.y}, as: z}]
`

// rfEnv is a seqworker with the three tools of swRetryFromSeq: rf.fetch
// echoes, rf.transform returns its call number ({"v": N}) and fails
// while failTransform is set, rf.publish echoes and fails while
// failPublish is set. A transform call waits for gate when one is set
// (entered says it was reached).
type rfEnv struct {
	env                        *swEnv
	c                          *client.Client
	calls                      swCounter
	failTransform, failPublish atomic.Bool
	gate                       atomic.Pointer[chan struct{}]
	entered                    chan struct{}
}

func rfStart(t *testing.T) *rfEnv {
	t.Helper()
	e := &rfEnv{env: swStart(t, natsserver.Options{}, swOptions()), entered: make(chan struct{}, 8)}
	swServe(t, e.env,
		swEcho("rf.fetch", &e.calls),
		tool.Tool{Name: "rf.transform", Func: func(ctx context.Context, args json.RawMessage) (any, error) {
			n := e.calls.add("rf.transform")
			if g := e.gate.Load(); g != nil {
				e.entered <- struct{}{}
				select {
				case <-*g:
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			}
			if e.failTransform.Load() {
				return nil, tool.Errorf("503", "the transformer is down")
			}
			return map[string]int{"v": n}, nil
		}},
		tool.Tool{Name: "rf.publish", Func: func(ctx context.Context, args json.RawMessage) (any, error) {
			e.calls.add("rf.publish")
			if e.failPublish.Load() {
				return nil, tool.Errorf("503", "the publisher is down")
			}
			return args, nil
		}},
	)
	swStore(t, e.env, swRetryFromSeq)
	swWorker(t, e.env, seqworker.Config{})
	c, err := client.New(e.env.nc)
	if err != nil {
		t.Fatal(err)
	}
	e.c = c
	return e
}

func (e *rfEnv) counts() string {
	return fmt.Sprintf("fetch %d, transform %d, publish %d", e.calls.get("rf.fetch"), e.calls.get("rf.transform"), e.calls.get("rf.publish"))
}

// TestSeqworkerRetryFrom: seq.retry with from (docs/runs.md, "Retry from
// a group") re-runs a run from an earlier group than the first one that
// did not finish: the groups before it are reused (their tools not called
// again), it and the groups after it are called again, and while it runs
// the new run holds only the slots of the reused groups. A succeeded run
// is retried from a group too (not without one); a retry of a retry
// names the run that really ran a reused group. Refused: a name that is
// no group (400, did you mean, the groups allowed), a number out of
// range (400), a group the run never reached (409), and a new run id
// asked again with another from (409); the same retry asked again is the
// same run.
func TestSeqworkerRetryFrom(t *testing.T) {
	t.Parallel()
	e := rfStart(t)
	env, c := e.env, e.c
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	e.failPublish.Store(true)
	swRequest(t, env, "rf-1", "rf", map[string]any{"n": 7})
	if st := swWait(t, env, "rf-1", 30*time.Second); st.Status != events.StatusFailed || st.FinishedGroups != 2 || st.Slots["y"] == nil {
		t.Fatalf("first run: %s after %d groups, slots %v (%s); want failed at group 3 with y written", st.Status, st.FinishedGroups, st.Slots, st.Error)
	}
	e.failPublish.Store(false)

	// From group 2, by name: its tool runs again while only x is kept.
	gate := make(chan struct{})
	e.gate.Store(&gate)
	if nid, err := c.Retry(ctx, "rf-1", "rf-2", false, client.WithRetryFrom("rf-transform")); err != nil || nid != "rf-2" {
		t.Fatalf("Retry from rf-transform = %q, %v", nid, err)
	}
	select {
	case <-e.entered:
	case <-ctx.Done():
		t.Fatalf("the retry never called rf.transform again (%s)", e.counts())
	}
	if st, _ := swState(t, env, "rf-2"); st.Slots["x"] == nil || st.Slots["y"] != nil || st.Slots["z"] != nil || len(st.SlotRefs) != 0 {
		t.Errorf("while group 2 runs again the retry holds slots %v, refs %v; want x only (the slots of the groups it reuses)", st.Slots, st.SlotRefs)
	}
	e.gate.Store(nil)
	close(gate)
	st := swWait(t, env, "rf-2", 30*time.Second)
	if st.Status != events.StatusSucceeded || st.RetryOf != "rf-1" {
		t.Fatalf("retry from group 2: %s retry_of %q (%s)", st.Status, st.RetryOf, st.Error)
	}
	if e.calls.get("rf.fetch") != 1 || e.calls.get("rf.transform") != 2 || e.calls.get("rf.publish") != 2 {
		t.Errorf("calls %s; want 1, 2, 2 (group 1 reused, groups 2 and 3 run again)", e.counts())
	}
	if slots, err := c.Slots(ctx, &st); err != nil || !strings.Contains(string(slots["z"]), `"v":2`) {
		t.Errorf("the retry's z = %s (%v); want the new transform's y (v 2)", slots["z"], err)
	}
	if r := swResult(t, st); r.Groups[0].ReusedFrom != "rf-1" || r.Groups[1].ReusedFrom != "" || r.Groups[2].ReusedFrom != "" {
		t.Errorf("retry's groups reused from %q, %q, %q; want rf-1, then run", r.Groups[0].ReusedFrom, r.Groups[1].ReusedFrom, r.Groups[2].ReusedFrom)
	}
	// The same retry asked again is the same run; another from is not.
	if reply, err := c.Retry(ctx, "rf-1", "rf-2", false, client.WithRetryFrom("2")); err != nil || reply != "rf-2" {
		t.Errorf("the same retry again = %q, %v; want rf-2", reply, err)
	}
	if _, err := c.Retry(ctx, "rf-1", "rf-2", false, client.WithRetryFrom("1")); !errors.Is(err, client.ErrConflict) || !strings.Contains(err.Error(), "already used for another run") {
		t.Errorf("run id rf-2 again with from 1: %v; want a conflict (another retry)", err)
	}

	// A succeeded run: refused without from, retried from group 3 with it.
	if _, err := c.Retry(ctx, "rf-2", "", false); !errors.Is(err, client.ErrConflict) || !strings.Contains(err.Error(), "--from GROUP") {
		t.Errorf("plain retry of a succeeded run: %v; want a conflict pointing at --from", err)
	}
	if _, err := c.Retry(ctx, "rf-2", "rf-3", false, client.WithRetryFrom("3")); err != nil {
		t.Fatalf("retry of a succeeded run from group 3: %v", err)
	}
	st = swWait(t, env, "rf-3", 30*time.Second)
	if st.Status != events.StatusSucceeded || e.calls.get("rf.fetch") != 1 || e.calls.get("rf.transform") != 2 || e.calls.get("rf.publish") != 3 {
		t.Errorf("retry of rf-2 from group 3: %s, calls %s (%s); want succeeded, only publish called again", st.Status, e.counts(), st.Error)
	}
	if r := swResult(t, st); r.Groups[0].ReusedFrom != "rf-1" || r.Groups[1].ReusedFrom != "rf-2" || r.Groups[2].ReusedFrom != "" {
		t.Errorf("rf-3's groups reused from %q, %q, %q; want rf-1 (which ran it), rf-2, then run", r.Groups[0].ReusedFrom, r.Groups[1].ReusedFrom, r.Groups[2].ReusedFrom)
	}
	// From group 1: nothing reused, every tool called again.
	if _, err := c.Retry(ctx, "rf-1", "rf-4", false, client.WithRetryFrom("rf-fetch")); err != nil {
		t.Fatalf("retry from group 1: %v", err)
	}
	if st = swWait(t, env, "rf-4", 30*time.Second); st.Status != events.StatusSucceeded || e.calls.get("rf.fetch") != 2 {
		t.Errorf("retry from group 1: %s, calls %s; want fetch called again", st.Status, e.counts())
	}

	// Refusals.
	for _, tc := range []struct {
		name, run, from string
		want            error
		says            []string
	}{
		{"typo", "rf-1", "rf-transfrom", client.ErrBadRequest, []string{`retry of run "rf-1": from "rf-transfrom": the run has no such group (did you mean "rf-transform"?)`, `1 "rf-fetch", 2 "rf-transform" or 3 "rf-publish"`}},
		{"out of range", "rf-1", "4", client.ErrBadRequest, []string{`from 4: the run has 3 groups`}},
	} {
		if _, err := c.Retry(ctx, tc.run, "", false, client.WithRetryFrom(tc.from)); !errors.Is(err, tc.want) || !containsAll(err.Error(), tc.says) {
			t.Errorf("%s: retry of %s from %q: %v; want %v saying %q", tc.name, tc.run, tc.from, err, tc.want, tc.says)
		}
	}
	e.failTransform.Store(true)
	swRequest(t, env, "rf-early", "rf", map[string]any{"n": 1})
	if st := swWait(t, env, "rf-early", 30*time.Second); st.Status != events.StatusFailed || st.FinishedGroups != 1 {
		t.Fatalf("rf-early: %s after %d groups; want failed at group 2", st.Status, st.FinishedGroups)
	}
	for _, from := range []string{"rf-publish", "3"} {
		_, err := c.Retry(ctx, "rf-early", "", false, client.WithRetryFrom(from))
		if !errors.Is(err, client.ErrConflict) || !containsAll(err.Error(), []string{`from 3 "rf-publish": the run never reached this group`, `it did not finish group 2 "rf-transform"`, `1 "rf-fetch" or 2 "rf-transform"`}) {
			t.Errorf("retry of rf-early from %q: %v; want a conflict: never reached, the groups allowed", from, err)
		}
	}
	if _, err := c.Retry(ctx, "rf-early", "", false, client.WithRetryFrom("")); !errors.Is(err, client.ErrInvalid) {
		t.Errorf("WithRetryFrom(\"\"): %v; want ErrInvalid", err)
	}
}

// TestCLIRunsRetryFrom: `skillbus runs retry RUN_ID --from GROUP` re-runs
// a run from that group (exit 0, the new id on stdout, what is reused on
// stderr) and passes the seqworker's refusals through with their code
// (exit 1): a mistyped group with the closest name, a succeeded run
// without --from pointing at it; an empty --from is a usage error (exit
// 2). runs show marks the reused group.
func TestCLIRunsRetryFrom(t *testing.T) {
	e := rfStart(t)
	t.Setenv(cli.EnvNATSURL, e.env.srv.ClientURL())
	e.failPublish.Store(true)
	swRequest(t, e.env, "rfc-1", "rf", map[string]any{"n": 3})
	if st := swWait(t, e.env, "rfc-1", 30*time.Second); st.Status != events.StatusFailed {
		t.Fatalf("first run: %s (%s); want failed", st.Status, st.Error)
	}
	e.failPublish.Store(false)

	code, out, errOut := cliRun(t, "runs", "retry", "rfc-1", "--from", "rf-transform", "--run-id", "rfc-2")
	if code != cli.ExitOK || strings.TrimSpace(out) != "rfc-2" || !strings.Contains(errOut, "run rfc-2 runs rfc-1 again from group rf-transform: the groups before it are reused") {
		t.Fatalf("runs retry --from: exit %d\n%s\n%s\nwant 0, rfc-2, saying what is reused", code, out, errOut)
	}
	if st := swWait(t, e.env, "rfc-2", 30*time.Second); st.Status != events.StatusSucceeded || e.calls.get("rf.fetch") != 1 || e.calls.get("rf.transform") != 2 {
		t.Fatalf("rfc-2: %s, calls %s (%s); want succeeded with group 1 reused", st.Status, e.counts(), st.Error)
	}
	if code, out, errOut := cliRun(t, "runs", "show", "rfc-2"); code != cli.ExitOK || !strings.Contains(out, "(reused)") || !strings.Contains(out, "Retry of:") {
		t.Errorf("runs show rfc-2: exit %d\n%s\n%s\nwant group 1 marked (reused), the chain", code, out, errOut)
	}
	for _, tc := range []struct {
		name string
		args []string
		code int
		says []string
	}{
		{"typo", []string{"rfc-1", "--from", "rf-transfrom"}, cli.ExitFailure, []string{`skillbus runs retry: `, `(code 400)`, `retry of run "rfc-1": from "rf-transfrom": the run has no such group (did you mean "rf-transform"?)`, `1 "rf-fetch", 2 "rf-transform" or 3 "rf-publish"`}},
		{"succeeded without --from", []string{"rfc-2"}, cli.ExitFailure, []string{`(code 409)`, `the run is succeeded`, `--from GROUP`}},
		{"empty --from", []string{"rfc-1", "--from", ""}, cli.ExitUsage, []string{`--from is empty`}},
	} {
		code, out, errOut := cliRun(t, append([]string{"runs", "retry"}, tc.args...)...)
		if code != tc.code || out != "" || !containsAll(errOut, tc.says) || strings.Contains(errOut, "client: ") {
			t.Errorf("%s: runs retry %v: exit %d\n%s\n%s\nwant exit %d saying %q (no Go prefix)", tc.name, tc.args, code, out, errOut, tc.code, tc.says)
		}
	}
}

func containsAll(s string, parts []string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}
