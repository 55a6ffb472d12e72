package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nuid"

	"github.com/skillbus/skillbus/internal/bench"
	"github.com/skillbus/skillbus/internal/natsserver"
	"github.com/skillbus/skillbus/internal/seqworker"
	"github.com/skillbus/skillbus/pkg/events"
	"github.com/skillbus/skillbus/pkg/tool"
)

// msgTap counts the messages the server routes, by kind, as a subscriber
// to ">" sees them: every publish, request, reply, delivery and ack.
type msgTap struct {
	mu     sync.Mutex
	counts map[string]int
}

// msgKind names the kind of a message by its subject.
func msgKind(subj string) string {
	switch {
	case strings.HasPrefix(subj, "$KV."):
		return "kv-write" // a RUNS (or the floor's bucket) write; its ack is a reply
	case strings.HasPrefix(subj, "$JS.API."):
		return "js-api" // stream info, direct gets, pulls
	case strings.HasPrefix(subj, "$JS.ACK."):
		return "js-ack"
	case strings.HasPrefix(subj, "$O."):
		return "obj"
	case strings.HasPrefix(subj, "_INBOX."):
		return "reply" // tool replies, publish acks, the seq.run reply
	case strings.HasPrefix(subj, "events."):
		return "event"
	case strings.HasPrefix(subj, "seq.run."), strings.HasPrefix(subj, "_skillbus_bench.floor.") && strings.HasSuffix(subj, ".run"):
		return "run-request" // its publish and its delivery to the worker
	case strings.HasPrefix(subj, "_skillbus_bench.floor."):
		return "finished" // the floor's finished message
	case strings.HasPrefix(subj, "tool."), strings.HasPrefix(subj, "_bench.raw."):
		return "tool-call"
	case subj == events.SeqRunSubject:
		return "seq.run"
	}
	return "other"
}

// BenchmarkSeqworkerMessages counts the NATS messages of one run of
// BenchmarkSeqworker's shape (3 groups × 8 echo calls), one at a time,
// started through skillbus.seq.run ("seqrun"), and of one run of the
// durable floor ("durable"), by kind (msgKind; KIND/run) and in all
// (msgs/run): what a run costs the server in messages and round trips
// (BENCHMARKS.md, "Messages per run"). 20 runs of each warm it up first.
//
//	go test -run '^$' -bench 'BenchmarkSeqworkerMessages' -benchtime 200x ./test/integration/
func BenchmarkSeqworkerMessages(b *testing.B) {
	env := swStart(b, natsserver.Options{}, events.Options{})
	swServe(b, env, tool.Tool{Name: "bench.echo", Func: func(ctx context.Context, args json.RawMessage) (any, error) { return args, nil }})
	swStore(b, env, swBenchSeq())
	swWorker(b, env, seqworker.Config{Concurrency: 16})
	rawProvider := natsserver.ConnectTB(b, env.srv)
	if _, err := rawProvider.QueueSubscribe("_bench.raw.echo", "bench-raw", func(m *nats.Msg) { _ = m.Respond(m.Data) }); err != nil {
		b.Fatal(err)
	}
	durable, err := bench.StartDurableFloor(context.Background(), natsserver.ConnectTB(b, env.srv), rawProvider, "mc"+nuid.Next()[16:], "_bench.raw.echo", 3, 8,
		func(g, c int) []byte { return fmt.Appendf(nil, `{"g":%d,"c":%d}`, g, c) })
	if err != nil {
		b.Fatal(err)
	}
	defer durable.Close()
	pub := natsserver.ConnectTB(b, env.srv)
	tap := &msgTap{counts: map[string]int{}}
	tapConn := natsserver.ConnectTB(b, env.srv)
	if _, err := tapConn.Subscribe(">", func(m *nats.Msg) {
		k := msgKind(m.Subject)
		tap.mu.Lock()
		tap.counts[k]++
		tap.mu.Unlock()
	}); err != nil {
		b.Fatal(err)
	}
	if err := tapConn.Flush(); err != nil {
		b.Fatal(err)
	}
	fin := make(chan string, 1)
	sub, err := pub.Subscribe("events.run.*.finished", func(m *nats.Msg) {
		var ev events.RunEvent
		if events.Decode(m.Data, &ev) == nil {
			fin <- ev.RunID
		}
	})
	if err != nil {
		b.Fatal(err)
	}
	defer sub.Unsubscribe()
	seqrun := func(i int) error {
		id := fmt.Sprintf("mc-%d-%d", time.Now().UnixNano(), i)
		body, _ := events.Encode(&events.SeqRunRequest{RunID: id, Sequence: "sw-bench"})
		if _, err := pub.Request(events.SeqRunSubject, body, 10*time.Second); err != nil {
			return err
		}
		for {
			select {
			case got := <-fin:
				if got == id {
					return nil
				}
			case <-time.After(10 * time.Second):
				return fmt.Errorf("no finished event")
			}
		}
	}
	for _, path := range []string{"seqrun", "durable"} {
		b.Run(path, func(b *testing.B) {
			for i := range 20 {
				if path == "seqrun" {
					_ = seqrun(i)
				} else {
					_, _ = durable.Run(context.Background())
				}
			}
			time.Sleep(200 * time.Millisecond)
			tap.mu.Lock()
			tap.counts = map[string]int{}
			tap.mu.Unlock()
			n := 0
			for b.Loop() {
				var err error
				if path == "seqrun" {
					err = seqrun(n)
				} else {
					_, err = durable.Run(context.Background())
				}
				if err != nil {
					b.Fatal(err)
				}
				n++
			}
			time.Sleep(200 * time.Millisecond)
			tap.mu.Lock()
			defer tap.mu.Unlock()
			total := 0
			keys := make([]string, 0, len(tap.counts))
			for k, c := range tap.counts {
				keys = append(keys, k)
				total += c
			}
			slices.Sort(keys)
			for _, k := range keys {
				b.ReportMetric(float64(tap.counts[k])/float64(n), k+"/run")
			}
			b.ReportMetric(float64(total)/float64(n), "msgs/run")
		})
	}
}
