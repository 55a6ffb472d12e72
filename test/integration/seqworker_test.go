package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

	"github.com/skillbus/skillbus/internal/natsserver"
	"github.com/skillbus/skillbus/internal/seqworker"
	"github.com/skillbus/skillbus/pkg/events"
	"github.com/skillbus/skillbus/pkg/seq"
	"github.com/skillbus/skillbus/pkg/tool"
)

const swParallelSeq = `
name: sw-parallel
groups:
  - name: sw-par-fetch
    in: {n: integer}
    out: {items: array<object>, first: object}
    tools:
      - {tool: sw.sleepy, args: {i: 1, n: $args.n}, as: items}
      - {tool: sw.sleepy, args: {i: 2}, as: items}
      - {tool: sw.sleepy, args: {i: 3}, as: items}
      - {tool: sw.echo, args: {first: true}, as: first}
  - name: sw-par-maybe
    in: {flag: bool}
    out: {maybe: object}
    when: $args.flag == true
    tools:
      - {tool: sw.echo, args: {never: true}, as: maybe}
  - name: sw-par-use
    in: {items: array<object>, maybe: object}
    out: {used: object}
    tools:
      - {tool: sw.echo, args: {items: $args.items, maybe: $args.maybe}, as: used}
`

const swFlakySeq = `
name: sw-flaky
groups:
  - name: sw-flaky-call
    out: {v: object}
    on_error: retry
    retries: 3
    tools:
      - {tool: sw.flaky, as: v}
`

func swMissingSeq(policy string) string {
	fallback, fallbackW := "", ""
	if policy == "degrade" {
		fallback, fallbackW = `, fallback: '{"degraded":true}'`, `, fallback: 'null'`
	}
	return fmt.Sprintf(`
name: sw-missing-%[1]s
groups:
  - name: sw-missing-%[1]s-g
    out: {v: object, w: object}
    missing: %[1]s
    timeout: 30s
    tools:
      - {tool: sw.nobody.serves.this, as: v%[2]s}
      - {tool: sw.echo, args: {ok: 1}, as: w%[3]s}
`, policy, fallback, fallbackW)
}

const swTimeoutSeq = `
name: sw-timeout
groups:
  - name: sw-timeout-g
    timeout: 300ms
    tools:
      - {tool: sw.slow}
`

const swTypedSeq = `
name: sw-typed
groups:
  - name: sw-typed-g
    in: {n: integer}
    tools:
      - {tool: sw.echo, args: {n: $args.n}}
`

const swLongSeq = `
name: sw-long
groups:
  - name: sw-long-g
    tools: [{tool: sw.long}]
`

const swBigArgSeq = `
name: sw-bigarg
groups:
  - name: sw-bigarg-fetch
    out: {parts: array<string>}
    tools:
      - {tool: sw.part, as: parts}
      - {tool: sw.part, as: parts}
      - {tool: sw.part, as: parts}
  - name: sw-bigarg-send
    in: {parts: array<string>}
    tools:
      - {tool: sw.echo, args: {all: $args.parts}}
`

const swBigSeq = `
name: sw-big
groups:
  - name: sw-big-fetch
    out: {blob: string}
    tools:
      - {tool: sw.blob, as: blob}
`

// TestSeqworkerRuns runs sequences through one worker and checks the
// final RUNS state of each: parallel groups, array slots in declaration
// order, when-skipping, retries against a flaky tool, a missing tool under
// each policy (fast), a group timeout, bad arguments and an unknown
// sequence terminated at once, a result over max_payload.
func TestSeqworkerRuns(t *testing.T) {
	t.Parallel()
	env := swStart(t, natsserver.Options{MaxPayload: 256 << 10}, swOptions())
	var flaky, long atomic.Int32
	swServe(t, env,
		swEcho("sw.echo", nil),
		tool.Tool{Name: "sw.sleepy", Func: func(ctx context.Context, args json.RawMessage) (any, error) {
			var a struct{ I int }
			_ = json.Unmarshal(args, &a)
			time.Sleep(time.Duration(4-a.I) * 100 * time.Millisecond) // 3 finishes first
			return args, nil
		}},
		tool.Tool{Name: "sw.flaky", Func: func(ctx context.Context, args json.RawMessage) (any, error) {
			if n := flaky.Add(1); n <= 2 {
				return nil, tool.Errorf("503", "flaky failure %d", n)
			}
			return map[string]int{"calls": int(flaky.Load())}, nil
		}},
		tool.Tool{Name: "sw.slow", Func: func(ctx context.Context, args json.RawMessage) (any, error) {
			time.Sleep(2 * time.Second) // ignores its deadline, like a stuck tool
			return "late", nil
		}},
		tool.Tool{Name: "sw.long", Func: func(ctx context.Context, args json.RawMessage) (any, error) {
			long.Add(1)
			time.Sleep(2500 * time.Millisecond) // AckWait is 1s
			return args, nil
		}},
		tool.Tool{Name: "sw.part", Func: func(ctx context.Context, args json.RawMessage) (any, error) {
			return strings.Repeat("y", 100<<10), nil
		}},
		tool.Tool{Name: "sw.blob", Func: func(ctx context.Context, args json.RawMessage) (any, error) {
			return strings.Repeat("x", 300<<10), nil
		}},
	)
	for _, src := range []string{swParallelSeq, swFlakySeq, swMissingSeq("fail"), swMissingSeq("skip"), swMissingSeq("degrade"), swTimeoutSeq, swTypedSeq, swBigSeq, swLongSeq, swBigArgSeq} {
		swStore(t, env, src)
	}
	swWorker(t, env, seqworker.Config{Concurrency: 4})

	t.Run("parallel, array slots, when", func(t *testing.T) {
		start := time.Now()
		swRequest(t, env, "r-par", "sw-parallel", map[string]any{"n": 7, "flag": false})
		st := swWait(t, env, "r-par", 20*time.Second)
		if st.Status != events.StatusSucceeded {
			t.Fatalf("status = %s (%s); want succeeded", st.Status, st.Error)
		}
		r := swResult(t, st)
		// In parallel the group takes about its longest call, run one after
		// another the sum of its calls; compared with the calls' own
		// durations, so a loaded machine (slower calls) does not fail it.
		var sum time.Duration
		for _, c := range r.Groups[0].Calls {
			sum += time.Duration(c.Duration)
		}
		if d := time.Duration(r.Groups[0].Duration); d >= sum*9/10 {
			t.Errorf("group 1 took %s, its %d calls %s together; want well under the sum (calls of up to 300 ms in parallel)", d, len(r.Groups[0].Calls), sum)
		}
		if got, want := string(st.Slots["items"]), `[{"i":1,"n":7},{"i":2},{"i":3}]`; got != want {
			t.Errorf("slot items = %s; want %s (declaration order, not completion order)", got, want)
		}
		if r.Groups[1].Status != seq.GroupSkipped || string(st.Slots["maybe"]) != "null" {
			t.Errorf("group 2 = %s, slot maybe = %s; want skipped, null", r.Groups[1].Status, st.Slots["maybe"])
		}
		if got := string(st.Slots["used"]); !strings.Contains(got, `"maybe":null`) {
			t.Errorf("slot used = %s; want the items and a null maybe", got)
		}
		if st.FinishedGroups != 3 || st.Attempt != 1 {
			t.Errorf("finished_groups = %d, attempt = %d; want 3, 1", st.FinishedGroups, st.Attempt)
		}
		t.Logf("end-to-end %s", time.Since(start))
	})

	t.Run("long group kept alive past AckWait", func(t *testing.T) {
		swRequest(t, env, "r-long", "sw-long", nil)
		st := swWait(t, env, "r-long", 20*time.Second)
		if st.Status != events.StatusSucceeded || st.Attempt != 1 || long.Load() != 1 {
			t.Errorf("state %s attempt %d, tool calls %d (%s); want succeeded on the first delivery with one call (in-progress acks)", st.Status, st.Attempt, long.Load(), st.Error)
		}
	})

	t.Run("retries against a flaky tool", func(t *testing.T) {
		swRequest(t, env, "r-flaky", "sw-flaky", nil)
		st := swWait(t, env, "r-flaky", 20*time.Second)
		r := swResult(t, st)
		if st.Status != events.StatusSucceeded || r.Groups[0].Calls[0].Attempts != 3 {
			t.Errorf("status = %s, attempts = %d; want succeeded after 3 attempts", st.Status, r.Groups[0].Calls[0].Attempts)
		}
	})

	for _, tc := range []struct {
		policy   string
		status   string
		slot     string
		callStat seq.CallStatus
	}{
		{"fail", events.StatusFailed, "", seq.CallFailed},
		{"skip", events.StatusSucceeded, "null", seq.CallSkipped},
		{"degrade", events.StatusSucceeded, `{"degraded":true}`, seq.CallDegraded},
	} {
		t.Run("missing "+tc.policy, func(t *testing.T) {
			id := "r-missing-" + tc.policy
			swRequest(t, env, id, "sw-missing-"+tc.policy, nil)
			st := swWait(t, env, id, 10*time.Second)
			r := swResult(t, st)
			if st.Status != tc.status {
				t.Fatalf("status = %s (%s); want %s", st.Status, st.Error, tc.status)
			}
			if d := time.Duration(r.Groups[0].Duration); d > time.Second {
				t.Errorf("group took %s under a 30s timeout; a missing tool must be known at once", d)
			}
			if c := r.Groups[0].Calls[0]; c.Status != tc.callStat {
				t.Errorf("call status = %s; want %s", c.Status, tc.callStat)
			}
			if tc.slot != "" && string(st.Slots["v"]) != tc.slot {
				t.Errorf("slot v = %s; want %s", st.Slots["v"], tc.slot)
			}
			if tc.policy == "fail" && !strings.Contains(st.Error, "sw.nobody.serves.this") {
				t.Errorf("error %q does not name the missing tool", st.Error)
			}
		})
	}

	t.Run("timeout", func(t *testing.T) {
		swRequest(t, env, "r-timeout", "sw-timeout", nil)
		st := swWait(t, env, "r-timeout", 10*time.Second)
		r := swResult(t, st)
		if st.Status != events.StatusFailed || !strings.Contains(st.Error, "timeout") {
			t.Errorf("status = %s, error %q; want failed with a timeout", st.Status, st.Error)
		}
		if d := time.Duration(r.Groups[0].Duration); d > 2*time.Second {
			t.Errorf("group took %s; want about its 300ms timeout", d)
		}
	})

	t.Run("bad arguments fail at once", func(t *testing.T) {
		swRequest(t, env, "r-badargs", "sw-typed", map[string]any{"n": "seven"})
		st := swWait(t, env, "r-badargs", 10*time.Second)
		if st.Status != events.StatusFailed || st.Attempt != 1 || !strings.Contains(st.Error, "integer") {
			t.Errorf("state = %s attempt %d error %q; want failed on the first delivery naming the expected type", st.Status, st.Attempt, st.Error)
		}
	})

	t.Run("unknown sequence terminated at once", func(t *testing.T) {
		swRequest(t, env, "r-unknown", "sw-no-such-sequence", nil)
		st := swWait(t, env, "r-unknown", 10*time.Second)
		if st.Status != events.StatusFailed || st.Attempt != 1 || !strings.Contains(st.Error, "sw-no-such-sequence") {
			t.Errorf("state = %s attempt %d error %q; want failed on the first delivery naming the sequence", st.Status, st.Attempt, st.Error)
		}
	})

	t.Run("result over max_payload", func(t *testing.T) {
		swRequest(t, env, "r-big", "sw-big", nil)
		st := swWait(t, env, "r-big", 10*time.Second)
		for _, want := range []string{"sw-big-fetch", "sw.blob", "max_payload"} {
			if st.Status != events.StatusFailed || !strings.Contains(st.Error, want) {
				t.Errorf("state = %s error %q; want failed with an error naming %q", st.Status, st.Error, want)
			}
		}
	})

	t.Run("argument over max_payload", func(t *testing.T) {
		swRequest(t, env, "r-bigarg", "sw-bigarg", nil)
		st := swWait(t, env, "r-bigarg", 10*time.Second)
		// The slots (3 × 100 KiB) do not fit a RUNS value (the server's
		// max_payload is 256 KiB): they are in the RUN_SLOTS object store,
		// nothing is dropped.
		for _, want := range []string{"sw-bigarg-send", "sw.echo", "payload too large"} {
			if st.Status != events.StatusFailed || !strings.Contains(st.Error, want) {
				t.Errorf("state = %s error %q; want failed with an error naming %q", st.Status, st.Error, want)
			}
		}
		if strings.Contains(st.Error, "dropped") || len(st.SlotRefs) == 0 {
			t.Errorf("state error %q, slot refs %v; want the large slots kept in the object store", st.Error, st.SlotRefs)
		}
	})

	// Nothing is left in the work queue: finished runs are acked, hopeless
	// ones terminated.
	swDrained(t, env, 20*time.Second, "every run request acknowledged")
}

// TestSeqworkerShare200Runs has two workers share 200 runs: every run ends
// succeeded in RUNS with exactly one finished event and one delivery.
func TestSeqworkerShare200Runs(t *testing.T) {
	t.Parallel()
	// One delivery per run is the point: an ack wait that a loaded machine
	// (race detector, other suites) cannot overrun between a delivery and
	// its first in-progress ack.
	opts := swOptions()
	opts.AckWait = 5 * time.Second
	env := swStart(t, natsserver.Options{}, opts)
	var calls swCounter
	swServe(t, env, swEcho("sw.count", &calls))
	swStore(t, env, `
name: sw-share
groups:
  - name: sw-share-a
    in: {i: integer}
    out: {a: object}
    tools: [{tool: sw.count, args: {i: $args.i}, as: a}]
  - name: sw-share-b
    in: {a: object}
    tools: [{tool: sw.count, args: {a: $args.a}}]
`)
	const n = 200
	var mu sync.Mutex
	finished := map[string]int{}
	allFinished := make(chan struct{}) // closed at the n-th run's first finished event
	sub, err := env.nc.Subscribe("events.run.*.finished", func(m *nats.Msg) {
		var ev events.RunEvent
		if events.Decode(m.Data, &ev) == nil {
			mu.Lock()
			finished[ev.RunID]++
			if len(finished) == n && finished[ev.RunID] == 1 {
				close(allFinished)
			}
			mu.Unlock()
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	swWorker(t, env, seqworker.Config{Concurrency: 8})
	swWorker(t, env, seqworker.Config{Concurrency: 8})
	for i := range n {
		swRequest(t, env, fmt.Sprintf("share-%03d", i), "sw-share", map[string]int{"i": i})
	}
	// A duplicate request inside the window is dropped by the server.
	swRequest(t, env, "share-000", "sw-share", map[string]int{"i": 0})
	for i := range n {
		id := fmt.Sprintf("share-%03d", i)
		st := swWait(t, env, id, 60*time.Second)
		if st.Status != events.StatusSucceeded || st.Attempt != 1 || st.FinishedGroups != 2 {
			t.Errorf("run %s: status %s attempt %d groups %d (%s); want succeeded, 1, 2", id, st.Status, st.Attempt, st.FinishedGroups, st.Error)
		}
	}
	select {
	case <-allFinished:
	case <-time.After(30 * time.Second):
		t.Errorf("not every run's finished event arrived within 30 s of its final state")
	}
	if err := env.nc.Flush(); err != nil { // a second finished event already sent is in by now
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	for i := range n {
		id := fmt.Sprintf("share-%03d", i)
		if finished[id] != 1 {
			t.Errorf("run %s: %d finished events; want 1", id, finished[id])
		}
	}
	if got := calls.get("sw.count"); got != 2*n {
		t.Errorf("sw.count called %d times; want %d (2 per run, no run twice)", got, 2*n)
	}
	if q := swQueued(t, env); q != 0 {
		t.Errorf("%d run requests left in the queue; want 0", q)
	}
}

// TestSeqworkerServiceEndpoints checks seq_call, run and status.
func TestSeqworkerServiceEndpoints(t *testing.T) {
	t.Parallel()
	env := swStart(t, natsserver.Options{}, swOptions())
	swServe(t, env, swEcho("sw.echo", nil))
	swStore(t, env, `
name: sw-svc
groups:
  - name: sw-svc-first
    in: {who: string}
    out: {greeting: object}
    tools: [{tool: sw.echo, args: {hello: $args.who}, as: greeting}]
`)
	swWorker(t, env, seqworker.Config{})
	req := func(subj string, body string) *nats.Msg {
		t.Helper()
		m, err := env.nc.Request(subj, []byte(body), 10*time.Second)
		if err != nil {
			t.Fatalf("request %s: %v", subj, err)
		}
		return m
	}
	for _, tc := range []struct {
		name, subj, body, code, want string
	}{
		{"seq_call", events.SeqCallSubject, `{"v":1,"group":"sw-svc-first","args":{"who":"ann"}}`, "", `"greeting":{"hello":"ann"}`},
		{"seq_call unknown group", events.SeqCallSubject, `{"v":1,"group":"nope"}`, "404", "nope"},
		{"seq_call bad args", events.SeqCallSubject, `{"v":1,"group":"sw-svc-first","args":{"who":5}}`, "400", "string"},
		{"seq_call not JSON", events.SeqCallSubject, `{{`, "400", "malformed"},
		{"run unknown sequence", events.SeqRunSubject, `{"v":1,"sequence":"nope"}`, "404", "nope"},
		{"run bad run id", events.SeqRunSubject, `{"v":1,"sequence":"sw-svc","run_id":"a b"}`, "400", "run"},
		{"status unknown", events.SeqStatusSubject, `{"v":1,"run_id":"nope"}`, "404", "nope"},
		{"status missing id", events.SeqStatusSubject, `{"v":1}`, "400", "run_id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := req(tc.subj, tc.body)
			code, desc := m.Header.Get(micro.ErrorCodeHeader), m.Header.Get(micro.ErrorHeader)
			if code != tc.code {
				t.Fatalf("request %s %s: code %q (%s); want %q", tc.subj, tc.body, code, desc, tc.code)
			}
			if got := string(m.Data) + desc; !strings.Contains(got, tc.want) {
				t.Errorf("request %s %s = %s; want it to contain %s", tc.subj, tc.body, got, tc.want)
			}
		})
	}
	t.Run("run then status", func(t *testing.T) {
		m := req(events.SeqRunSubject, `{"v":1,"sequence":"sw-svc","args":{"who":"bo"}}`)
		var rr events.SeqRunReply
		if err := events.Decode(m.Data, &rr); err != nil {
			t.Fatalf("run reply %s: %v", m.Data, err)
		}
		st := swWait(t, env, rr.RunID, 10*time.Second)
		if st.Status != events.StatusSucceeded {
			t.Fatalf("run %s: %s (%s)", rr.RunID, st.Status, st.Error)
		}
		m = req(events.SeqStatusSubject, swJSON(map[string]any{"v": 1, "run_id": rr.RunID}))
		var got events.RunState
		if err := events.Decode(m.Data, &got); err != nil || got.Status != events.StatusSucceeded || !strings.Contains(string(got.Slots["greeting"]), "bo") {
			t.Errorf("status = %s, %v; want the succeeded state with the greeting", m.Data, err)
		}
	})
	t.Run("run id is an idempotency key", func(t *testing.T) {
		first := req(events.SeqRunSubject, `{"v":1,"sequence":"sw-svc","run_id":"sw-idem","args":{"who":"cy"}}`)
		if code := first.Header.Get(micro.ErrorCodeHeader); code != "" {
			t.Fatalf("first run: code %s %s", code, first.Header.Get(micro.ErrorHeader))
		}
		if st := swWait(t, env, "sw-idem", 10*time.Second); st.Status != events.StatusSucceeded {
			t.Fatalf("run sw-idem: %s (%s)", st.Status, st.Error)
		}
		// The same request again (keys in another order) is the same run.
		again := req(events.SeqRunSubject, `{"args":{"who":"cy"},"run_id":"sw-idem","sequence":"sw-svc","v":1}`)
		if code := again.Header.Get(micro.ErrorCodeHeader); code != "" {
			t.Errorf("same request again: code %s %s; want the run back", code, again.Header.Get(micro.ErrorHeader))
		}
		// Other arguments under the same id are refused, naming the id.
		other := req(events.SeqRunSubject, `{"v":1,"sequence":"sw-svc","run_id":"sw-idem","args":{"who":"dee"}}`)
		if code, desc := other.Header.Get(micro.ErrorCodeHeader), other.Header.Get(micro.ErrorHeader); code != "409" || !strings.Contains(desc, "sw-idem") {
			t.Errorf("other arguments, same run id: code %q %q; want 409 naming the run id", code, desc)
		}
		m := req(events.SeqStatusSubject, `{"v":1,"run_id":"sw-idem"}`)
		var got events.RunState
		if err := events.Decode(m.Data, &got); err != nil || !strings.Contains(string(got.Slots["greeting"]), "cy") {
			t.Errorf("status after the refused reuse = %s, %v; want the first run's result kept", m.Data, err)
		}
	})
}

// TestSeqworkerMaxDeliveries: a run whose deliveries are exhausted without
// an ack (here: a consumer that never acks, standing in for workers that
// die) ends failed in RUNS with the reason, and its request is removed.
func TestSeqworkerMaxDeliveries(t *testing.T) {
	t.Parallel()
	opts := swOptions()
	opts.MaxDeliver = 2
	env := swStart(t, natsserver.Options{}, opts)
	swStore(t, env, swTypedSeq)
	swRequest(t, env, "r-exhausted", "sw-typed", map[string]int{"n": 1})
	cons, err := env.js.Consumer(context.Background(), events.StreamSeqRuns, events.ConsumerSeqworker)
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 2; i++ {
		m, err := cons.Next(jetstreamFetchWait(3 * time.Second))
		if err != nil {
			t.Fatalf("delivery %d: %v", i, err)
		}
		if md, _ := m.Metadata(); md.NumDelivered != uint64(i) {
			t.Fatalf("delivery %d: NumDelivered = %d", i, md.NumDelivered)
		}
	}
	swWorker(t, env, seqworker.Config{})
	st := swWait(t, env, "r-exhausted", 10*time.Second)
	if st.Status != events.StatusFailed || !strings.Contains(st.Error, "gave up after 2 deliveries") {
		t.Errorf("state = %s %q; want failed, gave up after 2 deliveries", st.Status, st.Error)
	}
	swDrained(t, env, 20*time.Second, "the exhausted request deleted")
}
