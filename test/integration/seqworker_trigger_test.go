package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillbus/skillbus/internal/natsserver"
	"github.com/skillbus/skillbus/internal/seqworker"
	"github.com/skillbus/skillbus/pkg/events"
	"github.com/skillbus/skillbus/pkg/tool"
)

// TestSeqworkerBootOnce publishes the same agent_ready twice (and a
// second boot of the agent) with two workers running: each boot sequence
// runs exactly once per agent and boot id; a sequence without boot: true
// never runs.
func TestSeqworkerBootOnce(t *testing.T) {
	t.Parallel()
	env := swStart(t, natsserver.Options{}, swOptions())
	var calls swCounter
	var mu sync.Mutex
	boots := map[string]int{} // tool|boot_id → calls
	rec := func(name string) tool.Tool {
		return tool.Tool{Name: name, Func: func(ctx context.Context, args json.RawMessage) (any, error) {
			var a struct{ Boot string }
			_ = json.Unmarshal(args, &a)
			mu.Lock()
			boots[name+"|"+a.Boot]++
			mu.Unlock()
			calls.add(name)
			return args, nil
		}}
	}
	swServe(t, env, rec("boot.a"), rec("boot.b"), rec("boot.never"))
	swStore(t, env, `{"name":"sw-boot-a","boot":true,"groups":[{"name":"sw-boot-a-g","tools":"{\"tool\":\"boot.a\",\"args\":{\"boot\":\"x\"}};"}]}`)
	// sw-boot-b reads the boot arguments: the agent and its boot id.
	swStore(t, env, `{"name":"sw-boot-b","boot":true,"groups":[{"name":"sw-boot-b-g","in":{"agent":"string","boot_id":"string"},"tools":"{\"tool\":\"boot.b\",\"args\":{\"boot\":\"$args.boot_id\",\"agent\":\"$args.agent\"}};"}]}`)
	swStore(t, env, `{"name":"sw-not-boot","groups":[{"name":"sw-not-boot-g","tools":"{\"tool\":\"boot.never\"};"}]}`)
	swWorker(t, env, seqworker.Config{})
	swWorker(t, env, seqworker.Config{})

	ready := func(bootID string) {
		t.Helper()
		subj, _ := events.AgentReadySubject("agent-7")
		if _, err := events.PublishMessage(context.Background(), env.js, subj, &events.AgentReady{Agent: "agent-7", BootID: bootID}); err != nil {
			t.Fatal(err)
		}
	}
	ready("boot-1")
	ready("boot-1") // the same event again
	ready("boot-2")
	for _, b := range []string{"boot-1", "boot-2"} {
		for _, s := range []string{"sw-boot-a", "sw-boot-b"} {
			id := seqworker.BootRunID("agent-7", b, s)
			if st := swWait(t, env, id, 20*time.Second); st.Status != events.StatusSucceeded {
				t.Errorf("boot run %s: %s (%s)", id, st.Status, st.Error)
			}
		}
	}
	ready("boot-1") // once more, after the runs finished
	// The behaviour is an absence: no run for a boot id seen before.
	time.Sleep(1500 * time.Millisecond)
	for tool, want := range map[string]int{"boot.a": 2, "boot.b": 2, "boot.never": 0} {
		if got := calls.get(tool); got != want {
			t.Errorf("%s called %d times; want %d (once per boot id)", tool, got, want)
		}
	}
	mu.Lock()
	for _, b := range []string{"boot-1", "boot-2"} {
		if got := boots["boot.b|"+b]; got != 1 {
			t.Errorf("boot.b called %d times with boot id %s from $args.boot_id; want 1 (boot runs get agent and boot_id); calls: %v", got, b, boots)
		}
	}
	mu.Unlock()
	if got := swBootRuns(t, env); got != 4 {
		t.Errorf("%d boot runs in RUNS; want 4", got)
	}
}

func swBootRuns(t *testing.T, env *swEnv) int {
	kv, err := env.js.KeyValue(context.Background(), events.BucketRuns)
	if err != nil {
		t.Fatal(err)
	}
	keys, err := kv.Keys(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, k := range keys {
		if len(k) > 5 && k[:5] == "boot-" {
			n++
		}
	}
	return n
}

// TestSeqworkerSchedule stores a sequence with schedule "@every 1s" with
// two workers running: it runs once per tick (ticks about 1 s apart, each
// a distinct run). Changing the sequence replaces its schedule (one
// schedule message, from the new revision); deleting it removes the
// schedule and the runs stop.
func TestSeqworkerSchedule(t *testing.T) {
	t.Parallel()
	env := swStart(t, natsserver.Options{}, swOptions())
	var mu sync.Mutex
	var ticks []time.Time
	swServe(t, env, tool.Tool{Name: "sched.tick", Func: func(ctx context.Context, args json.RawMessage) (any, error) {
		mu.Lock()
		ticks = append(ticks, time.Now())
		mu.Unlock()
		return args, nil
	}})
	src := func(every string) string {
		return `{"name":"sw-sched","schedule":"@every ` + every + `","groups":[{"name":"sw-sched-g","tools":"{\"tool\":\"sched.tick\"};"}]}`
	}
	swWorker(t, env, seqworker.Config{})
	swWorker(t, env, seqworker.Config{})
	swStore(t, env, src("1s"))

	time.Sleep(4500 * time.Millisecond) // the behaviour: the server's tick rate over 4.5 s of real time
	mu.Lock()
	got := append([]time.Time(nil), ticks...)
	mu.Unlock()
	if len(got) < 3 || len(got) > 5 {
		t.Fatalf("%d runs in 4.5 s of an @every 1s schedule; want 3 to 5", len(got))
	}
	// One run per tick: the runs' tick times (scheduled_at, the server's)
	// are about 1 s apart. (The calls' own times are not compared: a run
	// delayed on a loaded machine then one on time made a gap of 518 ms.)
	// A tick that came after the calls were counted has a run that has
	// not made its call yet: the count of runs is read until the calls
	// catch up, not once.
	var sched []time.Time
	for deadline := time.Now().Add(3 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		sched = sched[:0]
		n := swTickRuns(t, env, func(st *events.RunState) { sched = append(sched, st.ScheduledAt) })
		mu.Lock()
		calls := len(ticks)
		mu.Unlock()
		if n == calls {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("%d tick runs in RUNS for %d tool calls; want one run per call", n, calls)
			break
		}
	}
	sort.Slice(sched, func(i, j int) bool { return sched[i].Before(sched[j]) })
	for i := 1; i < len(sched); i++ {
		if gap := sched[i].Sub(sched[i-1]); gap < 800*time.Millisecond || gap > 1600*time.Millisecond {
			t.Errorf("tick times of runs %d and %d are %s apart (%s, %s); want about 1s (one run per tick)", i, i+1, gap, sched[i-1], sched[i])
		}
	}

	// Change: one schedule message remains, made from the new revision.
	rev := swStore(t, env, src("2s"))
	stream, err := env.js.Stream(context.Background(), events.StreamSeqRuns)
	if err != nil {
		t.Fatal(err)
	}
	subj, _ := events.ScheduleSubject("sw-sched")
	h := swSubjectUntil(t, env.nc, env.js, events.StreamSeqRuns, subj, 20*time.Second, fmt.Sprintf("schedule of revision %d", rev), func(h nats.Header, _ []byte) bool {
		return h.Get(events.HeaderSequenceRevision) == strconv.FormatUint(rev, 10)
	})
	if p := h.Get("Nats-Schedule"); p != "@every 2s" {
		t.Errorf("schedule after the change = %q; want @every 2s", p)
	}
	if n := swSubjectCount(t, stream, subj); n != 1 {
		t.Errorf("%d messages on %s after the change; want 1 (the new schedule replaces the old)", n, subj)
	}

	// Delete: the schedule goes, the runs stop.
	kv, _ := env.js.KeyValue(context.Background(), events.BucketSequences)
	if err := kv.Delete(context.Background(), events.KeyFor("sw-sched")); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for swSubjectCount(t, stream, subj) != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("schedule %s not removed after the sequence was deleted", subj)
		}
		time.Sleep(50 * time.Millisecond) // a message's removal has no event a consumer sees
	}
	mu.Lock()
	before := len(ticks)
	mu.Unlock()
	time.Sleep(2500 * time.Millisecond) // the behaviour is an absence: no tick in 2.5 s (past a tick of 2 s)
	mu.Lock()
	after := len(ticks)
	mu.Unlock()
	if after > before+1 { // a tick already in flight may still run
		t.Errorf("%d runs after the sequence was deleted; want none", after-before)
	}
}

func swSubjectCount(t *testing.T, s jetstream.Stream, subj string) uint64 {
	t.Helper()
	info, err := s.Info(context.Background(), jetstream.WithSubjectFilter(subj))
	if err != nil {
		t.Fatal(err)
	}
	return info.State.Subjects[subj]
}

// swTickRuns counts the scheduled runs in RUNS (each must have
// succeeded), calling each, when given, with every one's state.
func swTickRuns(t *testing.T, env *swEnv, each ...func(*events.RunState)) int {
	kv, err := env.js.KeyValue(context.Background(), events.BucketRuns)
	if err != nil {
		t.Fatal(err)
	}
	keys, err := kv.Keys(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, k := range keys {
		if st, ok := swState(t, env, k); ok && len(k) > 5 && k[:5] == "tick-" {
			if st.Status != events.StatusSucceeded {
				t.Errorf("tick run %s: %s (%s)", k, st.Status, st.Error)
			}
			for _, f := range each {
				f(&st)
			}
			n++
		}
	}
	return n
}
