package servicecmdtest

import (
	"context"
	"io"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/skillbus/skillbus/internal/natsserver"
)

// JetStreamWrites records the JetStream API requests that create or
// change streams and consumers on nc's account ("STREAM.CREATE KV_RUNS",
// "STREAM.UPDATE EVENTS", "CONSUMER.CREATE SEQ_RUNS"), in the order the
// server received them, from the moment it returns until tb ends. It
// reads them as a subscriber of the API subjects, so nothing is mocked.
// The returned function returns what was recorded so far.
func JetStreamWrites(tb testing.TB, nc *nats.Conn) func() []string {
	tb.Helper()
	var (
		mu  sync.Mutex
		got []string
	)
	const api = "$JS.API."
	for _, subj := range []string{api + "STREAM.CREATE.*", api + "STREAM.UPDATE.*", api + "CONSUMER.CREATE.>", api + "CONSUMER.DURABLE.CREATE.>"} {
		sub, err := nc.Subscribe(subj, func(m *nats.Msg) {
			parts := strings.Split(strings.TrimPrefix(m.Subject, api), ".")
			call := parts[0] + "." + parts[1]
			if parts[1] == "DURABLE" {
				call, parts = parts[0]+".CREATE", parts[1:]
			}
			mu.Lock()
			got = append(got, call+" "+parts[2])
			mu.Unlock()
		})
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { _ = sub.Unsubscribe() })
	}
	if err := nc.Flush(); err != nil {
		tb.Fatal(err)
	}
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), got...)
	}
}

// ProvisionsOnce runs a service command (its run function, with args and
// --nats pointing at a fresh embedded server) until it logs "msg=ready",
// stops it, and fails tb unless it created every stream at most once and
// updated none: the command provisions once, with create calls
// (internal/servicecmd ProvisionRetry), and the service's own start does
// not provision a second time with update-then-create calls (which, with
// several services starting on a fresh cluster, waited until their
// deadline and made the service exit 1). It returns the calls seen.
func ProvisionsOnce(tb testing.TB, run func(ctx context.Context, args []string, stdout, stderr io.Writer) int, args ...string) []string {
	tb.Helper()
	srv := natsserver.StartTB(tb, natsserver.Options{})
	calls := JetStreamWrites(tb, natsserver.ConnectTB(tb, srv))
	args = append([]string{"--nats", srv.ClientURL(), "--memory"}, args...)
	code, out := StartStop(tb, func(ctx context.Context, stderr io.Writer) int {
		return run(ctx, args, io.Discard, stderr)
	}, "msg=ready")
	if code != 0 {
		tb.Fatalf("exit %d; want 0; log:\n%s", code, out)
	}
	got := calls()
	count := map[string]int{}
	for _, c := range got {
		count[c]++
	}
	var bad []string
	for c, n := range count {
		if strings.HasPrefix(c, "STREAM.UPDATE ") || (strings.HasPrefix(c, "STREAM.CREATE ") && n > 1) {
			bad = append(bad, c)
		}
	}
	sort.Strings(bad)
	if len(bad) > 0 {
		tb.Errorf("provisioned more than once: %s\nall JetStream writes, in order:\n  %s\nlog:\n%s", strings.Join(bad, ", "), strings.Join(got, "\n  "), out)
	}
	return got
}
