package integration

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

	"github.com/skillbus/skillbus/internal/natsserver"
	"github.com/skillbus/skillbus/internal/seqworker"
	"github.com/skillbus/skillbus/pkg/events"
)

// TestSeqworkerClaimOverPending: a run started through seq.run is claimed
// over its pending state (the request carries the pending revision, so the
// claim is one compare-and-set), and a request whose revision hint is stale
// or unreadable falls back to reading the state: a finished run is
// acknowledged without a tool call or a write.
func TestSeqworkerClaimOverPending(t *testing.T) {
	t.Parallel()
	env := swStart(t, natsserver.Options{}, swOptions())
	var calls swCounter
	swServe(t, env, swEcho("sw.claim", &calls))
	swStore(t, env, `
name: sw-claim
groups:
  - name: sw-claim-one
    tools: [{tool: sw.claim, args: {n: 1}}]
  - name: sw-claim-two
    tools: [{tool: sw.claim, args: {n: 2}}]
`)
	swWorker(t, env, seqworker.Config{})

	const id = "claim-1"
	m, err := env.nc.Request(events.SeqRunSubject, []byte(`{"v":1,"sequence":"sw-claim","run_id":"`+id+`"}`), 10*time.Second)
	if err != nil {
		t.Fatalf("seq.run: %v", err)
	}
	if code := m.Header.Get(micro.ErrorCodeHeader); code != "" {
		t.Fatalf("seq.run: %s %s", code, m.Header.Get(micro.ErrorHeader))
	}
	st := swWait(t, env, id, 10*time.Second)
	if st.Status != events.StatusSucceeded || st.Attempt != 1 || calls.get("sw.claim") != 2 {
		t.Fatalf("run %s: %s attempt %d, %d tool calls (%s); want succeeded on attempt 1 with 2 calls", id, st.Status, st.Attempt, calls.get("sw.claim"), st.Error)
	}

	kv, err := env.js.KeyValue(context.Background(), events.BucketRuns)
	if err != nil {
		t.Fatal(err)
	}
	e, err := kv.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	// The RUNS stream of this server holds this run only, so revisions
	// count its writes: 1 pending (seq.run), 2 the claim over it, 3 the
	// checkpoint of group 1, 4 the final state (which is the checkpoint of
	// group 2).
	const pendingRev, finalRev = 1, 4
	if e.Revision() != finalRev {
		t.Fatalf("run %s: final state at revision %d; want %d (pending, claim, one checkpoint, final)", id, e.Revision(), finalRev)
	}

	subj, err := events.RunSubject("sw-claim")
	if err != nil {
		t.Fatal(err)
	}
	body, err := events.Encode(&events.RunRequest{RunID: id, Sequence: "sw-claim"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, hint string }{
		{"stale pending revision", strconv.FormatUint(pendingRev, 10)},
		// The attack of issue 11 §4: a hint equal to the finished state's
		// current revision. The hint is honoured only over a queued state
		// of the same request, so the finished run is not run again.
		{"the finished state's own revision", strconv.FormatUint(finalRev, 10)},
		{"unreadable revision", "seven"},
		{"no revision", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// No Nats-Msg-Id: the stream keeps it as a new request for
			// the same run id (a replay after the duplicate window).
			msg := &nats.Msg{Subject: subj, Data: body, Header: nats.Header{}}
			if tc.hint != "" {
				msg.Header.Set("Skillbus-Pending-Revision", tc.hint)
			}
			if _, err := env.js.PublishMsg(context.Background(), msg); err != nil {
				t.Fatalf("publish: %v", err)
			}
			swDrained(t, env, 10*time.Second, "the replayed request for the finished run "+id+" acknowledged")
			e, err := kv.Get(context.Background(), id)
			if err != nil {
				t.Fatal(err)
			}
			if e.Revision() != finalRev || calls.get("sw.claim") != 2 {
				t.Errorf("after a replay with hint %q: revision %d, %d tool calls; want %d (untouched) and 2", tc.hint, e.Revision(), calls.get("sw.claim"), finalRev)
			}
		})
	}
}
