package integration

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/skillbus/skillbus/internal/natsserver"
	"github.com/skillbus/skillbus/internal/seqworker"
	"github.com/skillbus/skillbus/pkg/events"
)

// TestSeqworkerWaitsForLiveHolder: a delivery of a run whose state says
// another worker holds it and still beats (as after a NATS restart that
// lost the holder's in-progress acks, when the server delivers the run
// again) does not take the run over: it waits while the holder beats,
// acknowledges the request without running anything when the holder
// finishes the run, and takes the run over once the holder falls silent.
func TestSeqworkerWaitsForLiveHolder(t *testing.T) {
	t.Parallel()
	env := swStart(t, natsserver.Options{}, swOptions()) // ack wait 1 s: a beat of 333 ms
	var calls swCounter
	swServe(t, env, swEcho("holder.one", &calls))
	swStore(t, env, `
name: holder
groups:
  - name: holder-one
    tools: [{tool: holder.one}]
`)
	kv, err := env.js.KeyValue(context.Background(), events.BucketRuns)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// ghost writes a running state held by another worker, and renews its
	// heartbeat every 200 ms until stop is closed; then it leaves the
	// state as it is (final, when given).
	ghost := func(runID string, stop <-chan struct{}, final *events.RunState) *sync.WaitGroup {
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			now := time.Now().UTC()
			st := events.RunState{RunID: runID, Sequence: "holder", Status: events.StatusRunning, Worker: "ghost", Attempt: 1, Groups: 1,
				Heartbeat: now, CreatedAt: now, StartedAt: now, UpdatedAt: now}
			for {
				st.Heartbeat = time.Now().UTC()
				b, _ := events.Encode(&st)
				if _, err := kv.Put(ctx, runID, b); err != nil {
					t.Errorf("ghost beat: %v", err)
				}
				select {
				case <-stop:
					if final != nil {
						b, _ := events.Encode(final)
						if _, err := kv.Put(ctx, runID, b); err != nil {
							t.Errorf("ghost final: %v", err)
						}
					}
					return
				case <-time.After(200 * time.Millisecond):
				}
			}
		}()
		return &wg
	}
	swWorker(t, env, seqworker.Config{WorkerID: "newcomer"})

	// The holder beats for 3 s, then falls silent: the run is taken over.
	stop := make(chan struct{})
	beating := ghost("r-holder-silent", stop, nil)
	swUntil(t, env, "r-holder-silent", 20*time.Second, "held by ghost", func(st events.RunState) bool { return st.Worker == "ghost" })
	swRequest(t, env, "r-holder-silent", "holder", nil)
	time.Sleep(3 * time.Second) // the behaviour: no takeover in 3 ack waits while the holder beats
	if n := calls.get("holder.one"); n != 0 {
		t.Fatalf("the tool ran %d times while the holder beat; want 0 (the run is the holder's)", n)
	}
	if st, _ := swState(t, env, "r-holder-silent"); st.Worker != "ghost" {
		t.Fatalf("the state is held by %q while the holder beats; want ghost", st.Worker)
	}
	close(stop)
	beating.Wait()
	silent := time.Now()
	st := swWait(t, env, "r-holder-silent", 15*time.Second)
	if st.Status != events.StatusSucceeded || st.Worker != "newcomer" || calls.get("holder.one") != 1 {
		t.Fatalf("after the holder fell silent: %s by %q, tool called %d times; want succeeded by newcomer, called once", st.Status, st.Worker, calls.get("holder.one"))
	}
	t.Logf("taken over %v after the holder's last beat", time.Since(silent).Round(time.Millisecond))

	// The holder beats, then finishes the run: the waiting delivery is
	// acknowledged without running anything.
	stop2 := make(chan struct{})
	now := time.Now().UTC()
	done := &events.RunState{RunID: "r-holder-done", Sequence: "holder", Status: events.StatusSucceeded, Worker: "ghost", Attempt: 1, Groups: 1, FinishedGroups: 1,
		CreatedAt: now, StartedAt: now, UpdatedAt: now, FinishedAt: now}
	beating = ghost("r-holder-done", stop2, done)
	swUntil(t, env, "r-holder-done", 20*time.Second, "held by ghost", func(st events.RunState) bool { return st.Worker == "ghost" })
	swRequest(t, env, "r-holder-done", "holder", nil)
	time.Sleep(2 * time.Second) // the behaviour: the request waits while the holder beats
	close(stop2)
	beating.Wait()
	swDrained(t, env, 10*time.Second, "the waiting delivery acknowledged once the holder finished")
	if n := calls.get("holder.one"); n != 1 {
		t.Errorf("the tool ran %d times in all; want 1 (the finished run is not run again)", n)
	}
	if st, _ := swState(t, env, "r-holder-done"); st.Worker != "ghost" || st.Status != events.StatusSucceeded {
		t.Errorf("the finished run's state is %s by %q; want the holder's succeeded state untouched", st.Status, st.Worker)
	}
}
