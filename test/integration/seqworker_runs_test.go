package integration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillbus/skillbus/internal/natsserver"
	"github.com/skillbus/skillbus/internal/seqworker"
	"github.com/skillbus/skillbus/pkg/client"
	"github.com/skillbus/skillbus/pkg/events"
)

// TestSeqworkerList10000 stores 10,000 run states as a worker writes them
// (a state with its summary headers) and lists them through seq.list:
// newest first, filtered, paged without gaps or repeats. It logs the time
// of one listing of the newest 50 (the whole bucket is read each time).
func TestSeqworkerList10000(t *testing.T) {
	if testing.Short() {
		t.Skip("stores 10,000 runs")
	}
	t.Parallel()
	env := swStart(t, natsserver.Options{}, swOptions())
	swWorker(t, env, seqworker.Config{})
	const n = 10000
	base := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	statuses := []string{events.StatusSucceeded, events.StatusFailed, events.StatusCancelled, events.StatusSucceeded}
	result := `{"sequence":"s","status":"succeeded","slots":{},"groups":[{"name":"g1","status":"succeeded","duration":1000,"calls":[{"tool":"fs.list","status":"succeeded","attempts":1,"duration":900}]}],"duration":1000}`
	for i := range n {
		st := &events.RunState{RunID: fmt.Sprintf("r%05d", i), Sequence: fmt.Sprintf("seq-%d", i%7), Status: statuses[i%4], Trigger: events.TriggerManual,
			Worker: "w1", FinishedGroups: 1, Groups: 1, Attempt: 1, CreatedAt: base.Add(time.Duration(i) * time.Second), UpdatedAt: base.Add(time.Duration(i)*time.Second + 1),
			Result: []byte(result), Slots: map[string]json.RawMessage{"out": json.RawMessage(`"` + strings.Repeat("x", 1500) + `"`)}}
		b, err := events.Encode(st)
		if err != nil {
			t.Fatal(err)
		}
		m := &nats.Msg{Subject: events.RunsKeySubject(st.RunID), Data: b, Header: nats.Header{}}
		st.Summary().SetHeader(m.Header)
		if _, err := env.js.PublishMsgAsync(m); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-env.js.PublishAsyncComplete():
	case <-time.After(60 * time.Second):
		t.Fatal("publishing 10,000 states took over 60s")
	}
	c, err := client.New(env.nc, client.WithTimeout(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var times []time.Duration
	var reply *events.SeqListReply
	for range 3 {
		t0 := time.Now()
		reply, err = c.List(ctx, events.SeqListRequest{})
		times = append(times, time.Since(t0))
		if err != nil {
			t.Fatal(err)
		}
	}
	slices.Sort(times)
	info, _ := env.js.KeyValue(ctx, events.BucketRuns)
	stt, _ := info.Status(ctx)
	// Baseline in the same run: one raw read of every state, as a client
	// of the bucket would do it.
	var naive []time.Duration
	for range 3 {
		t0 := time.Now()
		cons, err := env.js.OrderedConsumer(ctx, "KV_"+events.BucketRuns, jetstream.OrderedConsumerConfig{DeliverPolicy: jetstream.DeliverLastPerSubjectPolicy})
		if err != nil {
			t.Fatal(err)
		}
		for got := 0; got < n; {
			batch, err := cons.Fetch(2000, jetstream.FetchMaxWait(5*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			k := 0
			for range batch.Messages() {
				k++
			}
			if k == 0 {
				t.Fatalf("full read stalled after %d states", got)
			}
			got += k
		}
		naive = append(naive, time.Since(t0))
	}
	slices.Sort(naive)
	t.Logf("listing the newest 50 of %d stored runs (%.1f MiB in RUNS): median %s (runs %v); reading every state whole: median %s",
		n, float64(stt.Bytes())/(1<<20), times[1].Round(time.Millisecond), times, naive[1].Round(time.Millisecond))
	// The listing reads the bucket once, headers only, and answers 50
	// summaries: its cost stays within a small factor of that raw read.
	if times[1] > 4*naive[1] {
		t.Errorf("listing took %s (median of 3), over 4× the raw read of every state (%s)", times[1], naive[1])
	}
	if times[1] > 30*time.Second {
		t.Errorf("listing took %s; want well under a second on an idle machine", times[1])
	}
	if reply.Total != n || len(reply.Runs) != events.DefaultListLimit || reply.Runs[0].RunID != "r09999" || reply.Next == "" {
		t.Fatalf("list: total %d, %d runs, first %v, next %q; want %d, %d, r09999 first, a next cursor", reply.Total, len(reply.Runs), reply.Runs[0].RunID, reply.Next, n, events.DefaultListLimit)
	}
	// Filters and pages.
	f, err := c.List(ctx, events.SeqListRequest{Status: events.StatusCancelled, Sequence: "seq-3", Since: base.Add(5000 * time.Second), Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range f.Runs {
		if r.Status != events.StatusCancelled || r.Sequence != "seq-3" || r.CreatedAt.Before(base.Add(5000*time.Second)) {
			t.Fatalf("filtered list holds %+v", r)
		}
	}
	if f.Total == 0 || f.Total != len(f.Runs) {
		t.Errorf("filtered list: total %d, %d runs; want a non-empty single page", f.Total, len(f.Runs))
	}
	seen := map[string]bool{}
	before := ""
	for pages := 0; ; pages++ {
		p, err := c.List(ctx, events.SeqListRequest{Status: events.StatusFailed, Limit: 700, Before: before})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range p.Runs {
			if seen[r.RunID] {
				t.Fatalf("run %s listed twice across pages", r.RunID)
			}
			seen[r.RunID] = true
		}
		if p.Next == "" {
			break
		}
		before = p.Next
	}
	if len(seen) != n/4 {
		t.Errorf("paging the failed runs found %d; want %d", len(seen), n/4)
	}
}

// TestCLIRuns drives `skillbus runs` and `run --detach` against a stack:
// a detached run is listed, shown with its worker, trigger, arguments,
// groups and outputs, rerun with the same arguments, and a blocked run is
// cancelled; it also measures the bytes a run adds to RUNS and EVENTS.
func TestCLIRuns(t *testing.T) {
	dir := t.TempDir()
	root := cliProject(t)
	seqFile := filepath.Join(dir, "count.seq.yaml")
	if err := os.WriteFile(seqFile, []byte(`name: count-lines
groups:
  - name: count-lines-list
    in: {root: string}
    out: {listing: object}
    tools: [{tool: fs.list, args: {path: $args.root}, as: listing}]
  - name: count-lines-sum
    in: {root: string}
    out: {lines: object}
    tools: [{tool: fs.lines, args: {path: $args.root}, as: lines}]
`), 0o644); err != nil {
		t.Fatal(err)
	}
	stack := cliStack(t, dir, root)
	code, out, errOut := cliRun(t, "run", "count-lines", "--arg", "root=.", "--detach")
	id := strings.TrimSpace(out)
	if code != 0 || !strings.HasPrefix(id, "run-") {
		t.Fatalf("run --detach: exit %d, stdout %q, stderr %q; want exit 0 and the run id", code, out, errOut)
	}
	nc, err := nats.Connect(stack.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	c, _ := client.New(nc)
	wctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if st, err := c.Wait(wctx, id, client.WaitOptions{Poll: 100 * time.Millisecond}); err != nil || st.Status != events.StatusSucceeded {
		t.Fatalf("detached run: %v %+v", err, st)
	}
	code, out, errOut = cliRun(t, "runs", "ls", "-o", "wide")
	if code != 0 || !strings.Contains(out, id) || !strings.Contains(out, "count-lines") || !strings.Contains(out, "succeeded") || !strings.Contains(out, "manual") || !strings.Contains(out, "2/2") {
		t.Fatalf("runs ls: exit %d\n%s\n%s", code, out, errOut)
	}
	code, out, errOut = cliRun(t, "runs", "show", id)
	for _, want := range []string{"Run:", id, "Status:", "succeeded (2 of 2 finished)", "Trigger:", "manual", "Worker:", "root = \".\"", "count-lines-list", "fs.list", "listing"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("runs show lacks %q (exit %d):\n%s\n%s", want, code, out, errOut)
		}
	}
	code, out, errOut = cliRun(t, "runs", "rerun", id)
	rid := strings.TrimSpace(out)
	if code != 0 || rid == id || !strings.HasPrefix(rid, "run-") {
		t.Fatalf("runs rerun: exit %d %q %q", code, out, errOut)
	}
	st, err := c.Wait(wctx, rid, client.WaitOptions{Poll: 100 * time.Millisecond})
	if err != nil || st.Status != events.StatusSucceeded || string(st.Args) != `{"root":"."}` {
		t.Fatalf("rerun: %v %+v; want succeeded with the same arguments", err, st)
	}
	// A rerun under a chosen id is idempotent, and says so when asked again.
	code, out, errOut = cliRun(t, "runs", "rerun", id, "--run-id", "rerun-fixed")
	if code != 0 || strings.TrimSpace(out) != "rerun-fixed" || !strings.Contains(errOut, "started with the sequence and arguments of "+id) {
		t.Errorf("runs rerun --run-id: exit %d %q %q", code, out, errOut)
	}
	code, out, errOut = cliRun(t, "runs", "rerun", id, "--run-id", "rerun-fixed")
	if code != 0 || strings.TrimSpace(out) != "rerun-fixed" || !strings.Contains(errOut, "run rerun-fixed already exists") || strings.Contains(errOut, "started with") {
		t.Errorf("runs rerun --run-id again: exit %d %q %q; want the same id and that nothing new was started", code, out, errOut)
	}
	if st, err := c.Wait(wctx, "rerun-fixed", client.WaitOptions{Poll: 100 * time.Millisecond}); err != nil || st.Status != events.StatusSucceeded {
		t.Errorf("rerun-fixed: %v %+v", err, st)
	}

	// One duration: `skillbus run`'s last progress line, its result header
	// and `runs show` print the same one (docs/runs.md, States).
	code, out, errOut = cliRun(t, "run", "count-lines", "--arg", "root=.", "--run-id", "dur-1")
	progLine := regexp.MustCompile(`run dur-1 succeeded in (\S+)\n`).FindStringSubmatch(errOut)
	header := regexp.MustCompile(`Run dur-1 of count-lines: succeeded in (\S+)\n`).FindStringSubmatch(out)
	if code != 0 || progLine == nil || header == nil || progLine[1] != header[1] {
		t.Errorf("run: exit %d, progress %q, header %q; want one duration in both\nstdout:\n%s\nstderr:\n%s", code, progLine, header, out, errOut)
	} else {
		code, out, errOut = cliRun(t, "runs", "show", "dur-1")
		if took := regexp.MustCompile(`Took:\s+(\S+) \(first claim to final state\)`).FindStringSubmatch(out); code != 0 || took == nil || took[1] != header[1] {
			t.Errorf("runs show dur-1: exit %d, Took %q; want %s as `skillbus run` printed\n%s\n%s", code, took, header[1], out, errOut)
		}
	}
	code, out, errOut = cliRun(t, "runs", "ls", "--before", "GARBAGE")
	if code != 2 || !strings.Contains(errOut, "--before") || !strings.Contains(errOut, "<created time>|<run id>") {
		t.Errorf("runs ls --before GARBAGE: exit %d %q %q; want 2 naming the flag and the cursor's form", code, out, errOut)
	}
	if _, err := c.List(wctx, events.SeqListRequest{Before: "GARBAGE"}); !errors.Is(err, client.ErrInvalid) || errors.Is(err, client.ErrBadRequest) {
		t.Errorf("seq.list with a bad cursor: %v; want ErrInvalid (the client checks it before sending; the worker checks it too)", err)
	}

	code, out, errOut = cliRun(t, "call", "count-lines-list", "--arg", "root=.", "--json")
	if code != 0 || !strings.Contains(out, `"run_id": "call-`) {
		t.Fatalf("call: exit %d\n%s\n%s\nwant the reply to name the recorded run", code, out, errOut)
	}
	code, out, errOut = cliRun(t, "runs", "ls", "--sequence", "count-lines")
	if code != 0 || !strings.Contains(out, "seq_call") || !strings.Contains(out, "1/1") {
		t.Errorf("runs ls after a seq_call: exit %d\n%s\n%s\nwant the call listed with trigger seq_call", code, out, errOut)
	}
	code, _, errOut = cliRun(t, "runs", "cancel", id)
	if code != 1 || !strings.Contains(errOut, "already finished") {
		t.Errorf("runs cancel of a finished run: exit %d, %q; want 1 saying it already finished", code, errOut)
	}
	code, _, errOut = cliRun(t, "runs", "show", strings.Repeat("x", 5000))
	if code != 2 {
		t.Errorf("runs show with a 5,000-character id: exit %d (%q); want 2", code, errOut)
	}

	// Bytes per run: 20 more runs of the two-group sequence.
	js, _ := jetstream.New(nc)
	size := func(stream string) uint64 {
		s, err := js.Stream(context.Background(), stream)
		if err != nil {
			t.Fatal(err)
		}
		info, err := s.Info(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return info.State.Bytes
	}
	runs0, ev0 := size("KV_"+events.BucketRuns), size(events.StreamEvents)
	const extra = 20
	for i := range extra {
		id, err := c.Start(context.Background(), events.SeqRunRequest{Sequence: "count-lines", Args: []byte(`{"root":"."}`), RunID: fmt.Sprintf("bytes-%d", i)})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Wait(wctx, id, client.WaitOptions{Poll: 50 * time.Millisecond}); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("bytes per run of a 2-group sequence (fs.list + fs.lines on a 9-file project): RUNS %d bytes (the last state of each key is kept), EVENTS %d bytes",
		(size("KV_"+events.BucketRuns)-runs0)/extra, (size(events.StreamEvents)-ev0)/extra)
}
