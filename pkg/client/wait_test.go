package client_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/skillbus/skillbus/internal/natsserver"
	"github.com/skillbus/skillbus/internal/seqworker"
	"github.com/skillbus/skillbus/pkg/client"
	"github.com/skillbus/skillbus/pkg/events"
	"github.com/skillbus/skillbus/pkg/seq"
	"github.com/skillbus/skillbus/pkg/tool"
)

// TestWaitWithAStoppedReplica: of three seqworker replicas one is stopped
// (SIGSTOP: its subscriptions stay on the server, which keeps routing
// requests of the queue group to it, and it never answers) — here a
// connection subscribed in the seqworkers' queue group that answers
// nothing. Wait returns within 1 s of each run's finished event, and never
// says "no seqworker answers" while two of them serve.
func TestWaitWithAStoppedReplica(t *testing.T) {
	srv := natsserver.StartTB(t, natsserver.Options{})
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	for i := range 2 {
		w, err := seqworker.New(natsserver.ConnectTB(t, srv), seqworker.Config{Logger: quiet, FetchWait: 200 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Start(context.Background()); err != nil {
			t.Fatalf("seqworker %d: %v", i, err)
		}
		t.Cleanup(func() { _ = w.Stop(context.Background()) })
	}
	stopped := natsserver.ConnectTB(t, srv)
	if _, err := stopped.QueueSubscribe("skillbus.seq.>", events.ServiceSeq, func(*nats.Msg) {}); err != nil {
		t.Fatal(err)
	}
	if err := stopped.Flush(); err != nil {
		t.Fatal(err)
	}
	tools, err := tool.Serve(natsserver.ConnectTB(t, srv), tool.ServerConfig{Name: "wait-tools"}, tool.Tool{Name: "nap", Func: func(ctx context.Context, _ json.RawMessage) (any, error) {
		time.Sleep(50 * time.Millisecond) // the tool's own work: the run is not over at once
		return "ok", nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tools.Stop(context.Background()) })
	s, err := seq.ParseYAML([]byte("name: napper\ngroups:\n  - name: nap\n    tools: [{tool: nap}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	inline, _ := seq.Encode(s)

	nc := natsserver.ConnectTB(t, srv)
	var mu sync.Mutex
	finished := map[string]time.Time{}
	if _, err := nc.Subscribe("events.run.*.finished", func(m *nats.Msg) {
		var ev events.RunEvent
		if events.Decode(m.Data, &ev) == nil {
			mu.Lock()
			finished[ev.RunID] = time.Now()
			mu.Unlock()
		}
	}); err != nil {
		t.Fatal(err)
	}
	// The timeout stands for the command line's 15 s: a request that
	// reaches the stopped replica waits for it.
	c, err := client.New(nc, client.WithTimeout(3*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const runs = 20
	var worst time.Duration
	for i := range runs {
		id := fmt.Sprintf("stopped-replica-%d", i)
		if _, err := c.Start(ctx, events.SeqRunRequest{RunID: id, Inline: inline}); err != nil {
			t.Fatalf("Start %s: %v", id, err)
		}
		var said []string
		st, err := c.Wait(ctx, id, client.WaitOptions{OnWaiting: func(text string) {
			if text != "" {
				said = append(said, text)
			}
		}})
		returned := time.Now()
		if err != nil {
			t.Fatalf("Wait %s: %v", id, err)
		}
		if st.Status != events.StatusSucceeded {
			t.Errorf("run %s = %s; want succeeded", id, st.Status)
		}
		for _, s := range said {
			if strings.Contains(s, "no seqworker answers") {
				t.Errorf("Wait %s said %q while two seqworkers serve", id, s)
			}
		}
		mu.Lock()
		at, ok := finished[id]
		mu.Unlock()
		if !ok {
			continue // Wait saw the state before the event reached this subscription
		}
		late := returned.Sub(at)
		worst = max(worst, late)
		if late > time.Second {
			t.Errorf("Wait %s returned %s after the run's finished event; want within 1s", id, late.Round(time.Millisecond))
		}
	}
	t.Logf("%d runs with one replica of three stopped: Wait returned at most %s after the finished event", runs, worst.Round(time.Millisecond))
}
