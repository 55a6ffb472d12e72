package seqworker

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/skillbus/skillbus/internal/natsserver"
	"github.com/skillbus/skillbus/pkg/events"
)

// TestReadStateLeader: the leader's read of a run state (what a resume
// request is dropped on, since a KV get may come from a lagging replica;
// TestChaosWaits lost 13 of 80 resumes that way) gives the last state
// and its revision, as the KV's own get does, and nil for a run with no
// state or a deleted one.
func TestReadStateLeader(t *testing.T) {
	srv := natsserver.StartTB(t, natsserver.Options{})
	nc := natsserver.ConnectTB(t, srv)
	w := startTestWorker(t, nc, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	if st, rev, err := w.readStateLeader(ctx, "no-such-run"); err != nil || st != nil || rev != 0 {
		t.Fatalf("no state: %v, %d, %v; want nil, 0, nil", st, rev, err)
	}
	st := &events.RunState{RunID: "leader-read", Sequence: "s", Status: events.StatusQueued, CreatedAt: time.Now().UTC()}
	rev, err := w.writeState(ctx, st, 0)
	if err != nil {
		t.Fatal(err)
	}
	st.Status = events.StatusWaiting
	st.Wait = &events.WaitState{Group: 2, Kind: "signal", Signal: "go", Token: "tok"}
	if rev, err = w.writeState(ctx, st, rev); err != nil {
		t.Fatal(err)
	}
	got, grev, err := w.readStateLeader(ctx, "leader-read")
	if err != nil || got == nil || grev != rev || got.Status != events.StatusWaiting || got.Wait == nil || got.Wait.Token != "tok" {
		t.Fatalf("readStateLeader = %+v, %d, %v; want the waiting state at revision %d", got, grev, err, rev)
	}
	if kst, krev, err := w.readState(ctx, "leader-read"); err != nil || krev != grev || kst.Status != got.Status {
		t.Errorf("readState = %v, %d, %v; want what the leader read (%d)", kst, krev, err, grev)
	}
	if err := w.runs.Delete(ctx, "leader-read"); err != nil {
		t.Fatal(err)
	}
	if st, rev, err := w.readStateLeader(ctx, "leader-read"); err != nil || st != nil || rev != 0 {
		t.Errorf("deleted: %v, %d, %v; want nil, 0, nil", st, rev, err)
	}
}

// startTestWorker starts a worker on nc with a silent logger and a short
// fetch wait (cfg's other fields as given), stopped when t ends.
func startTestWorker(t *testing.T, nc *nats.Conn, cfg Config) *Worker {
	t.Helper()
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg.FetchWait = 200 * time.Millisecond
	w, err := New(nc, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Stop(context.Background()) })
	return w
}
