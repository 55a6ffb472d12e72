package seqworker

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/skillbus/skillbus/internal/natsserver"
	"github.com/skillbus/skillbus/pkg/events"
)

// TestUpdateEntryConflictOnReplicatedBucket: on an R3 SEQ_SCHEDULES a
// compare-and-set write proposed while another write of the key is in
// flight is refused with code 10164, not 10071, and jetstream.ErrKeyExists
// does not match it. updateEntry must read again and decide again, as for
// any conflict: four writers of one key, ten writes each, all succeed and
// all count. It did not: TestChaosSchedules saw "catch-up tick not
// admitted … key revision mismatch" after a node kill, and the ticks the
// server had not fired were lost without a record.
func TestUpdateEntryConflictOnReplicatedBucket(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 3-node cluster")
	}
	nodes, err := natsserver.StartCluster(3, "entries", t.TempDir(), 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer natsserver.ShutdownAll(nodes)
	nc, err := nats.Connect(nodes[0].ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	w, err := New(nc, Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), FetchWait: 200 * time.Millisecond,
		Provision: events.Options{Replicas: 3}})
	if err != nil {
		t.Fatal(err)
	}
	for {
		sctx, scancel := context.WithTimeout(ctx, 20*time.Second)
		err = w.Start(sctx)
		scancel()
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatal(err)
		}
		time.Sleep(500 * time.Millisecond) // the cluster places the streams
	}
	defer func() { _ = w.Stop(context.Background()) }()

	// Writers of one key at once: a write proposed while another's is in
	// flight is refused with 10164 by the stream's leader; one proposed
	// after it was applied, with 10071.
	const writers, each = 4, 10
	errs := make(chan error, writers*each)
	var wg sync.WaitGroup
	for range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				_, err := w.updateEntry(ctx, "s", "e", func(st *events.ScheduleState) error { st.Started++; return nil })
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	failed := 0
	for err := range errs {
		if err != nil {
			failed++
			if failed <= 3 {
				t.Errorf("updateEntry with %d writers at once: %v; want it read again and written", writers, err)
			}
		}
	}
	got, _, err := w.readEntry(ctx, "s", "e")
	if err != nil || got.Started != int64(writers*each-failed) {
		t.Errorf("stored %+v, %v; want started %d (every write that returned nil counted once)", got, err, writers*each-failed)
	}
}
