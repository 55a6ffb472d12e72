package console_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/skillbus/skillbus/internal/console"
	"github.com/skillbus/skillbus/internal/natsserver"
	"github.com/skillbus/skillbus/pkg/events"
)

// TestNATSDown stops the NATS server under a running console: an action
// in flight is answered 503 at once naming NATS, the stream says so
// ("nats" event, connected false), an action is answered 503 at once
// naming NATS (not after a request timeout, not blaming the seqworker),
// /api/info says so, and once the server is back on the same port and
// store the stream says connected again (docs/console.md, "Live updates").
func TestNATSDown(t *testing.T) {
	dir := t.TempDir()
	ns := natsserver.StartTB(t, natsserver.Options{StoreDir: dir})
	url := ns.ClientURL()
	var port int
	if _, err := fmtSscan(url, &port); err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(url, nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	srv, err := console.New(nc, console.Config{Listen: "127.0.0.1:0", NATSURL: url})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Stop(ctx)
	})
	base := srv.URL()
	stream := openSSE(t, base+"api/stream")
	natsIs := func(want bool) func(name, data string) bool {
		return func(name, data string) bool {
			var st console.NATSState
			switch name {
			case "hello":
				var h struct{ NATS console.NATSState }
				if json.Unmarshal([]byte(data), &h) != nil {
					return false
				}
				st = h.NATS
			case "nats":
				if json.Unmarshal([]byte(data), &st) != nil {
					return false
				}
			default:
				return false
			}
			return st.Connected == want && (want || !st.Since.IsZero())
		}
	}
	stream.until(t, 5*time.Second, "hello with NATS connected", natsIs(true))

	// A seqworker that takes the rerun and never answers: the action is
	// in flight when the server goes.
	got := make(chan struct{}, 1)
	stuck, err := nc.Subscribe(events.SeqRerunSubject, func(*nats.Msg) { got <- struct{}{} })
	if err != nil {
		t.Fatal(err)
	}
	defer stuck.Unsubscribe()
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	inFlight := make(chan error, 1)
	go func() { inFlight <- postJSON(base+"api/runs/r-0123456789abcdef/rerun", map[string]any{}, nil) }()
	select {
	case <-got:
	case <-time.After(5 * time.Second):
		t.Fatal("the rerun did not reach the stuck seqworker")
	}
	t0 := time.Now()
	ns.Shutdown()
	select {
	case err := <-inFlight:
		var he *httpError
		if !errors.As(err, &he) || he.Status != 503 || !strings.Contains(he.Body.Error, "is unreachable") {
			t.Errorf("a rerun in flight when NATS went: %v; want 503 naming the unreachable NATS server", err)
		}
		if took := time.Since(t0); took > 2*time.Second {
			t.Errorf("a rerun in flight when NATS went was answered after %s; want at once", took)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a rerun in flight when NATS went was not answered in 10 s")
	}
	stream.until(t, 5*time.Second, "a nats event saying the connection is down", natsIs(false))
	t0 = time.Now()
	err = postJSON(base+"api/runs/r-0123456789abcdef/rerun", map[string]any{}, nil)
	took := time.Since(t0)
	var he *httpError
	if !errors.As(err, &he) || he.Status != 503 {
		t.Fatalf("rerun while NATS is down: %v, want 503", err)
	}
	if !strings.Contains(he.Body.Error, "NATS server at "+url+" is unreachable") || strings.Contains(he.Body.Error, "seqworker") {
		t.Errorf("rerun while NATS is down says %q; want it to name the unreachable NATS server", he.Body.Error)
	}
	if took > time.Second {
		t.Errorf("rerun while NATS is down took %s; want an answer at once", took)
	}
	var info struct{ NATS console.NATSState }
	if err := getJSON(base+"api/info", &info); err != nil || info.NATS.Connected || info.NATS.Since.IsZero() {
		t.Errorf("/api/info while NATS is down: %+v, %v", info.NATS, err)
	}

	ns2, err := natsserver.Start(natsserver.Options{StoreDir: dir, Port: port})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ns2.Shutdown)
	stream.until(t, 10*time.Second, "a nats event saying the connection is back", natsIs(true))
	if err := getJSON(base+"api/info", &info); err != nil || !info.NATS.Connected {
		t.Errorf("/api/info after NATS is back: %+v, %v", info.NATS, err)
	}
}

// fmtSscan reads the port of nats://HOST:PORT.
func fmtSscan(url string, port *int) (int, error) {
	return fmtSscanInt(url[strings.LastIndex(url, ":")+1:], port)
}

// fmtSscanInt reads one integer.
func fmtSscanInt(s string, n *int) (int, error) { return fmt.Sscan(s, n) }
