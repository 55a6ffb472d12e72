package integration

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skillbus/skillbus/internal/natsserver"
	"github.com/skillbus/skillbus/internal/seqworker"
	"github.com/skillbus/skillbus/pkg/client"
	"github.com/skillbus/skillbus/pkg/events"
	"github.com/skillbus/skillbus/pkg/tool"
)

const swRetrySeq = `
name: rt
groups:
  - name: rt-fetch
    in: {n: integer}
    out: {data: object, big: string}
    tools:
      - {tool: rt.fetch, args: {n: $args.n}, as: data}
      - {tool: rt.big, as: big}
  - name: rt-use
    in: {data: object, big: string}
    out: {used: object}
    tools: [{tool: rt.use, args: {d: $args.data, size: "$args.big"}, as: used}]
`

// TestSeqworkerRetry: seq.retry continues a failed run in a new run from
// its first unfinished group: the finished group's tools are not called
// again, its slots (one in the object store) are reused, the new run
// records retry_of and the original retried_by. A run that succeeded is
// not retryable (409), an unknown one not found, and --latest is refused
// when the stored definition changed before that group.
func TestSeqworkerRetry(t *testing.T) {
	t.Parallel()
	env := swStart(t, natsserver.Options{}, swOptions())
	var calls swCounter
	var broken atomic.Bool
	broken.Store(true)
	swServe(t, env,
		swEcho("rt.fetch", &calls),
		tool.Tool{Name: "rt.big", Func: func(ctx context.Context, args json.RawMessage) (any, error) {
			calls.add("rt.big")
			return strings.Repeat("b", 100<<10), nil // over the inline limit: kept in the object store
		}},
		tool.Tool{Name: "rt.use", Func: func(ctx context.Context, args json.RawMessage) (any, error) {
			calls.add("rt.use")
			if broken.Load() {
				return nil, tool.Errorf("503", "the backend is down")
			}
			var a struct{ D map[string]any }
			_ = json.Unmarshal(args, &a)
			return map[string]any{"got": a.D}, nil
		}},
	)
	swStore(t, env, swRetrySeq)
	swWorker(t, env, seqworker.Config{})
	c, err := client.New(env.nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	swRequest(t, env, "r-rt", "rt", map[string]any{"n": 7})
	st := swWait(t, env, "r-rt", 30*time.Second)
	if st.Status != events.StatusFailed || st.FinishedGroups != 1 || st.SlotRefs["big"].Object == "" {
		t.Fatalf("first run: %s after %d groups, refs %+v (%s)", st.Status, st.FinishedGroups, st.SlotRefs, st.Error)
	}

	broken.Store(false)
	nid, err := c.Retry(ctx, "r-rt", "r-rt-2", false)
	if err != nil || nid != "r-rt-2" {
		t.Fatalf("Retry = %q, %v", nid, err)
	}
	st = swWait(t, env, "r-rt-2", 30*time.Second)
	if st.Status != events.StatusSucceeded || st.RetryOf != "r-rt" {
		t.Fatalf("retry: %s retry_of %q (%s)", st.Status, st.RetryOf, st.Error)
	}
	if calls.get("rt.fetch") != 1 || calls.get("rt.big") != 1 || calls.get("rt.use") != 2 {
		t.Errorf("calls fetch %d, big %d, use %d; want 1, 1, 2 (the finished group not run again)", calls.get("rt.fetch"), calls.get("rt.big"), calls.get("rt.use"))
	}
	slots, err := c.Slots(ctx, &st)
	if err != nil || !strings.Contains(string(slots["used"]), `"got":{"n":7}`) || len(slots["big"]) < 100<<10 {
		t.Errorf("slots of the retry: used %s, big %d bytes (%v)", slots["used"], len(slots["big"]), err)
	}
	if r := swResult(t, st); r.Groups[0].Status != "succeeded" || r.Groups[1].Status != "succeeded" || r.Groups[0].ReusedFrom != "r-rt" || r.Groups[1].ReusedFrom != "" {
		t.Errorf("retry's groups: %+v; want both succeeded, the first reused from r-rt, the second run", r.Groups)
	}
	orig, _ := swState(t, env, "r-rt")
	if len(orig.RetriedBy) != 1 || orig.RetriedBy[0] != "r-rt-2" || orig.Status != events.StatusFailed {
		t.Errorf("original after the retry: %s retried_by %v", orig.Status, orig.RetriedBy)
	}

	if _, err := c.Retry(ctx, "r-rt-2", "", false); !errors.Is(err, client.ErrConflict) || !strings.Contains(err.Error(), "succeeded") {
		t.Errorf("retry of a succeeded run: %v; want a conflict naming its status", err)
	}
	if _, err := c.Retry(ctx, "nope", "", false); !errors.Is(err, client.ErrNotFound) {
		t.Errorf("retry of an unknown run: %v", err)
	}
	// --latest, after group 1 changed: refused with what differs.
	swStore(t, env, strings.Replace(swRetrySeq, "args: {n: $args.n}", "args: {n: $args.n, more: true}", 1))
	if _, err := c.Retry(ctx, "r-rt", "", true); !errors.Is(err, client.ErrConflict) || !strings.Contains(err.Error(), `definition changed`) || !strings.Contains(err.Error(), `group 1 "rt-fetch" differs`) {
		t.Errorf("retry --latest after a change: %v", err)
	}
}

// TestSeqworkerRetryInline: a run of an inline sequence (`skillbus run
// FILE`) is retried too: the retry's request carries the inline
// definition only (a request naming both a sequence and an inline one is
// malformed), and it continues from the failed group.
func TestSeqworkerRetryInline(t *testing.T) {
	t.Parallel()
	env := swStart(t, natsserver.Options{}, swOptions())
	var calls swCounter
	var broken atomic.Bool
	broken.Store(true)
	swServe(t, env, swEcho("rti.first", &calls), tool.Tool{Name: "rti.second", Func: func(ctx context.Context, args json.RawMessage) (any, error) {
		calls.add("rti.second")
		if broken.Load() {
			return nil, tool.Errorf("503", "down")
		}
		return map[string]bool{"ok": true}, nil
	}})
	swWorker(t, env, seqworker.Config{})
	c, err := client.New(env.nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	inline := json.RawMessage(`{"name":"rti","groups":[{"name":"rti-a","tools":[{"tool":"rti.first","args":{"x":1}}]},{"name":"rti-b","tools":[{"tool":"rti.second"}]}]}`)
	if _, err := c.Start(ctx, events.SeqRunRequest{RunID: "rti-1", Inline: inline}); err != nil {
		t.Fatal(err)
	}
	if st := swWait(t, env, "rti-1", 30*time.Second); st.Status != events.StatusFailed || st.FinishedGroups != 1 {
		t.Fatalf("inline run: %s after %d groups (%s); want failed after 1", st.Status, st.FinishedGroups, st.Error)
	}
	broken.Store(false)
	if _, err := c.Retry(ctx, "rti-1", "rti-2", false); err != nil {
		t.Fatalf("Retry of an inline run: %v", err)
	}
	st := swWait(t, env, "rti-2", 30*time.Second)
	if st.Status != events.StatusSucceeded || st.RetryOf != "rti-1" || calls.get("rti.first") != 1 {
		t.Fatalf("retry of the inline run: %s retry_of %q, rti.first called %d times (%s); want succeeded, its first group not run again", st.Status, st.RetryOf, calls.get("rti.first"), st.Error)
	}
}
