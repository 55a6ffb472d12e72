package registry

import (
	"context"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillbus/skillbus/internal/natsconn"
	"github.com/skillbus/skillbus/internal/natsserver"
	"github.com/skillbus/skillbus/pkg/events"
)

// TestLeaseRetakenAfterNATSRestart: the NATS server is stopped for longer
// than half the lease's TTL, so the leader stops writing, and started
// again on the same port and store. The registry, connected as a service
// is (natsconn.Dial), takes its lease back within 2 s of the server's
// return (docs/operations.md, skillbus_registry_leader) — not when its
// entry expires, up to the TTL later.
func TestLeaseRetakenAfterNATSRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("stops a NATS server for about 8 s")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	store := t.TempDir()
	srv := natsserver.StartTB(t, natsserver.Options{Port: port, StoreDir: store})

	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "s/SKILL.md"), skillMD("s", "v1"))
	logs := &syncBuf{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	conn, err := natsconn.Dial(&natsconn.Config{URL: srv.ClientURL()}, "registry-restart", log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	r, err := New(conn.Conn, Config{Dir: dir, Debounce: 50 * time.Millisecond, MaxDelay: 500 * time.Millisecond, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := r.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = r.Stop(sctx)
	})
	if !r.leading.Load() {
		t.Fatal("the only registry does not hold the lease")
	}

	down := time.Now()
	srv.Shutdown()
	eventually(t, "the leader stops writing while NATS is down", func() (bool, string) {
		return !r.leading.Load(), "still leading"
	})
	if d := time.Since(down); d < events.RegistryLeaseTTL/2 {
		t.Fatalf("stepped down %s after NATS stopped; want at least %s (ttl/2)", d, events.RegistryLeaseTTL/2)
	}
	srv2, err := natsserver.Start(natsserver.Options{Port: port, StoreDir: store})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv2.Shutdown)
	back := time.Now()
	outage := back.Sub(down)
	took := eventually(t, "the lease taken back after NATS returned", func() (bool, string) {
		return r.leading.Load(), "not leading"
	})
	t.Logf("NATS down for %s; lease taken back %s after the server returned", outage.Round(time.Millisecond), took.Round(time.Millisecond))
	if took > 2*time.Second {
		t.Errorf("lease taken back %s after NATS returned (down %s); want within 2s\n%s", took, outage, logs)
	}
	if !strings.Contains(logs.String(), "took the registry lease back") {
		t.Errorf("no log line for the lease taken back:\n%s", logs)
	}
	// The leader writes again: an edit is stored.
	writeFile(t, filepath.Join(dir, "s/SKILL.md"), skillMD("s", "v2"))
	e := &leaseEnv{srv: srv2, nc: natsserver.ConnectTB(t, srv2)}
	e.js, _ = jetstream.New(e.nc)
	skills := e.kv(t, events.BucketSkills)
	eventually(t, "the edit stored after the restart", func() (bool, string) {
		v := value(skills, "s")
		return strings.Contains(v, `"description":"v2"`), v
	})
}
