package kvsession_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillbus/skillbus/internal/kvsession"
	"github.com/skillbus/skillbus/internal/natsserver"
	"github.com/skillbus/skillbus/pkg/events"
	"github.com/skillbus/skillbus/pkg/skillface"
)

// directEnv is a bucket on an embedded server with a direct-get store
// over it.
func directEnv(t *testing.T, cfg jetstream.KeyValueConfig) (jetstream.KeyValue, *kvsession.Store) {
	t.Helper()
	srv := natsserver.StartTB(t, natsserver.Options{})
	nc := natsserver.ConnectTB(t, srv)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	kv, err := js.CreateKeyValue(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return kv, kvsession.NewDirect(kv, nc, cfg.Bucket)
}

// TestDirectDeletedAndPurged: a session deleted or purged in the bucket
// (a marker as the last message of its key) reads as not found, as with
// kv.Get, and can be created again.
func TestDirectDeletedAndPurged(t *testing.T) {
	kv, st := directEnv(t, jetstream.KeyValueConfig{Bucket: "DIRECT_DEL", History: 1})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, op := range []string{"delete", "purge"} {
		id := "s-" + op
		if _, err := st.CompareAndSet(ctx, id, []byte("v1"), 0); err != nil {
			t.Fatal(err)
		}
		var err error
		if op == "delete" {
			err = kv.Delete(ctx, id)
		} else {
			err = kv.Purge(ctx, id)
		}
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := st.Get(ctx, id); !errors.Is(err, skillface.ErrSessionNotFound) {
			t.Errorf("Get after %s = %v; want ErrSessionNotFound", op, err)
		}
		if _, err := st.CompareAndSet(ctx, id, []byte("v2"), 0); err != nil {
			t.Errorf("create after %s: %v", op, err)
		}
		if v, _, err := st.Get(ctx, id); err != nil || string(v) != "v2" {
			t.Errorf("Get after re-create = %q, %v; want v2", v, err)
		}
	}
}

// TestDirectNotAllowed: on a bucket that does not allow direct gets the
// store reads with kv.Get instead.
func TestDirectNotAllowed(t *testing.T) {
	srv := natsserver.StartTB(t, natsserver.Options{})
	nc := natsserver.ConnectTB(t, srv)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "NODIRECT", History: 1}); err != nil {
		t.Fatal(err)
	}
	// Turn direct gets off on the bucket's stream.
	s, err := js.Stream(ctx, "KV_NODIRECT")
	if err != nil {
		t.Fatal(err)
	}
	cfg := s.CachedInfo().Config
	cfg.AllowDirect = false
	if _, err := js.UpdateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	kv, err := js.KeyValue(ctx, "NODIRECT")
	if err != nil {
		t.Fatal(err)
	}
	st := kvsession.NewDirect(kv, nc, "NODIRECT")
	rev, err := st.CompareAndSet(ctx, "s", []byte("v"), 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 { // the first read finds out, the second goes to kv.Get at once
		v, r, err := st.Get(ctx, "s")
		if err != nil || string(v) != "v" || r != rev {
			t.Fatalf("read %d = %q, %d, %v; want v at revision %d", i+1, v, r, err, rev)
		}
	}
}

// TestDirectAbandonedReads: reads given up (context ended before the
// answer) leave no trace: many reads, concurrent and after abandoned
// ones, each get their own session's value.
func TestDirectAbandonedReads(t *testing.T) {
	_, st := directEnv(t, jetstream.KeyValueConfig{Bucket: events.BucketSessions, History: 1})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const n = 20
	for i := range n {
		if _, err := st.CompareAndSet(ctx, fmt.Sprintf("s%d", i), []byte(fmt.Sprintf("v%d", i)), 0); err != nil {
			t.Fatal(err)
		}
	}
	// Abandon reads: their context is already over when they are waited
	// for, so their answers arrive later on the slots' subscriptions.
	for i := range n {
		actx, acancel := context.WithCancel(ctx)
		wait := st.StartGet(actx, fmt.Sprintf("s%d", i))
		acancel()
		if _, _, err := wait(); err != nil && !errors.Is(err, context.Canceled) {
			t.Fatalf("abandoned read: %v", err)
		}
	}
	var wg sync.WaitGroup
	for round := range 5 {
		for i := range n {
			wg.Go(func() {
				id := fmt.Sprintf("s%d", (i+round)%n)
				v, _, err := st.Get(ctx, id)
				if err != nil || string(v) != "v"+id[1:] {
					t.Errorf("Get(%s) = %q, %v; want %q", id, v, err, "v"+id[1:])
				}
			})
		}
		wg.Wait()
	}
}
