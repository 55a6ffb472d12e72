package integration

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillbus/skillbus/internal/auth"
	"github.com/skillbus/skillbus/pkg/events"
)

// TestAuthReplySubjects: a reply subject is not checked by any
// permission (docs/security.md, "Reply subjects are not permissions").
// As the reader, a skillbus.seq.status request for run A whose reply
// subject is run B's RUNS key, or a SEQ_RUNS subject, would have the
// seqworker's answer (A's state) stored as B's state or as a run request:
// the seqworker drops requests whose reply is not an inbox, so nothing is
// stored. The reader may not direct-get KV_RUNS or OBJ_RUN_SLOTS (whose
// reply is the stored message as it is), and still reads a run's state
// (skillbus watch RUN) and a large slot (runs show) by STREAM.MSG.GET.
func TestAuthReplySubjects(t *testing.T) {
	e := authStart(t)
	e.as(t, auth.RoleRunner)
	big := filepath.Join(t.TempDir(), "big.seq.yaml")
	os.WriteFile(big, []byte("name: big-read\ngroups:\n  - name: big-g\n    out: {text: object}\n    tools:\n      - tool: fs.read\n        args: {path: big.txt}\n        as: text\n"), 0o644)
	var ids []string
	for range 2 {
		code, out, errOut := cliRun(t, "run", big, "--json")
		var st struct {
			RunID  string `json:"run_id"`
			Status string `json:"status"`
		}
		if err := json.Unmarshal([]byte(out), &st); code != 0 || err != nil || st.Status != "succeeded" {
			t.Fatalf("runner: a run with a large slot = %d, %v\nstdout: %.300s\nstderr: %s", code, err, out, errOut)
		}
		ids = append(ids, st.RunID)
	}
	a, b := ids[0], ids[1]

	// The seqworker's view: B's entry and SEQ_RUNS's last sequence.
	snc, _ := e.conn(t, auth.RoleSeqworker)
	sjs, _ := jetstream.New(snc)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	kv, err := sjs.KeyValue(ctx, events.BucketRuns)
	if err != nil {
		t.Fatal(err)
	}
	entryOf := func(id string) (uint64, string) {
		en, err := kv.Get(ctx, id)
		if err != nil {
			t.Fatalf("RUNS %s: %v", id, err)
		}
		return en.Revision(), string(en.Value())
	}
	seqRunsLast := func() uint64 {
		s, err := sjs.Stream(ctx, events.StreamSeqRuns)
		if err != nil {
			t.Fatalf("SEQ_RUNS: %v", err)
		}
		return s.CachedInfo().State.LastSeq
	}
	revB, valB := entryOf(b)
	lastRuns := seqRunsLast()

	rnc, rerrs := e.conn(t, auth.RoleReader)
	body, _ := json.Marshal(events.SeqStatusRequest{V: 1, RunID: a})
	for _, reply := range []string{"$KV." + events.BucketRuns + "." + b, "seq.run.big-read", "seq.run.replayed"} {
		if err := rnc.PublishMsg(&nats.Msg{Subject: events.SeqStatusSubject, Reply: reply, Data: body}); err != nil {
			t.Fatalf("reader: publish seq.status with reply %s: %v", reply, err)
		}
	}
	// The same request with an inbox is answered; by then the seqworker
	// has handled the three above (in order, on its subscription).
	for range 2 {
		m, err := rnc.Request(events.SeqStatusSubject, body, 10*time.Second)
		if err != nil || !strings.Contains(string(m.Data), a) {
			t.Fatalf("reader: seq.status of %s with an inbox = %v, %.200s %v", a, err, msgData(m), m.Header)
		}
	}
	if rev, val := entryOf(b); rev != revB || val != valB {
		t.Errorf("RUNS %s changed (revision %d → %d): the seqworker's answer about %s was stored as its state: %.200s", b, revB, rev, a, val)
	}
	if l := seqRunsLast(); l != lastRuns {
		t.Errorf("SEQ_RUNS grew from %d to %d messages: the seqworker's answer was stored as a run request", lastRuns, l)
	}

	// Direct gets are refused to the reader; STREAM.MSG.GET is not.
	refuseJS(t, auth.RoleReader, rnc, rerrs, "$JS.API.DIRECT.GET.KV_"+events.BucketRuns, map[string]any{"last_by_subj": "$KV." + events.BucketRuns + "." + a})
	refuseJS(t, auth.RoleReader, rnc, rerrs, "$JS.API.DIRECT.GET.KV_"+events.BucketRuns+".$KV."+events.BucketRuns+"."+a, nil)
	refuseJS(t, auth.RoleReader, rnc, rerrs, "$JS.API.DIRECT.GET.OBJ_"+events.BucketRunSlots, map[string]any{"seq": 1})
	m, err := rnc.Request("$JS.API.STREAM.MSG.GET.KV_"+events.BucketRuns, []byte(`{"last_by_subj":"$KV.`+events.BucketRuns+`.`+a+`"}`), 10*time.Second)
	if err != nil || !strings.Contains(string(m.Data), `"message"`) {
		t.Errorf("reader: STREAM.MSG.GET of RUNS %s = %v, %.200s", a, err, msgData(m))
	}
	mark2 := e.log.mark()

	// The reader's reads still work: a run's state, a large slot.
	e.as(t, auth.RoleReader)
	if code, out, errOut := cliRun(t, "watch", a); code != 0 || !strings.Contains(errOut, "is known (status succeeded)") {
		t.Errorf("reader: skillbus watch %s = %d\nstdout: %.300s\nstderr: %s", a, code, out, errOut)
	}
	if code, out, errOut := cliRun(t, "runs", "show", a); code != 0 || !strings.Contains(out, "0123456789abcdef") {
		t.Errorf("reader: runs show of a run with a large slot (RUN_SLOTS) = %d: %.300s\nstderr: %s", code, out, errOut)
	}
	if v := e.log.violations(mark2); len(v) > 0 {
		t.Errorf("the reader's reads logged %d permission violations:\n%s", len(v), strings.Join(v, "\n"))
	}

	// The residual risk (docs/security.md): the JetStream API still
	// answers any reply subject, so the reader can have a STREAM.INFO
	// answer (JSON that is no run state or request) stored as B's state
	// and as a run request. The seqworker survives both: the request is
	// dropped as unreadable, B's unreadable state is treated as absent,
	// A and new runs are untouched.
	for _, reply := range []string{"$KV." + events.BucketRuns + "." + b, "seq.run.big-read"} {
		if err := rnc.PublishMsg(&nats.Msg{Subject: "$JS.API.STREAM.INFO.KV_" + events.BucketRuns, Reply: reply}); err != nil {
			t.Fatal(err)
		}
	}
	cliEventually(t, "the STREAM.INFO answer to be stored as B's state", func() bool { rev, _ := entryOf(b); return rev != revB })
	cliEventually(t, "the STREAM.INFO answer to be stored in SEQ_RUNS", func() bool { return seqRunsLast() > lastRuns })
	e.as(t, auth.RoleRunner)
	if code, out, errOut := cliRun(t, "run", big, "--json"); code != 0 || !strings.Contains(out, "succeeded") {
		t.Errorf("runner: a run after the junk was stored = %d\nstdout: %.300s\nstderr: %s", code, out, errOut)
	}
	e.as(t, auth.RoleReader)
	if code, out, errOut := cliRun(t, "runs", "show", a); code != 0 || !strings.Contains(out, "succeeded") {
		t.Errorf("reader: runs show %s after B's state was overwritten = %d: %.300s\nstderr: %s", a, code, out, errOut)
	}
	if code, out, errOut := cliRun(t, "runs", "show", b); code == 0 || !strings.Contains(errOut, "is not a run state") {
		t.Errorf("reader: runs show of B, whose state is now a STREAM.INFO answer = %d: %.200s\nstderr: %.300s; want the seqworker's error naming it", code, out, errOut)
	}
	if code, out, _ := cliRun(t, "runs", "ls"); code != 0 || !strings.Contains(out, a) {
		t.Errorf("reader: runs ls after B's state was overwritten = %d: %.500s", code, out)
	}
}
