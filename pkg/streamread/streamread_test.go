package streamread_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillbus/skillbus/internal/natsserver"
	"github.com/skillbus/skillbus/pkg/streamread"
)

func env(t testing.TB) (*nats.Conn, jetstream.JetStream, context.Context) {
	t.Helper()
	srv := natsserver.StartTB(t, natsserver.Options{})
	nc := natsserver.ConnectTB(t, srv)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return nc, js, ctx
}

// TestFollowHistoryThenLive: a Follower from sequence 1 returns the stored
// messages of its filters in order, then each new one once, published
// from another goroutine while it reads: none missed, none doubled, and
// none of another subject.
func TestFollowHistoryThenLive(t *testing.T) {
	for _, direct := range []bool{false, true} {
		t.Run(fmt.Sprintf("direct=%v", direct), func(t *testing.T) {
			nc, js, ctx := env(t)
			if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "EV", Subjects: []string{"ev.>"}, AllowDirect: direct}); err != nil {
				t.Fatal(err)
			}
			for i := range 30 {
				js.Publish(ctx, fmt.Sprintf("ev.a.%d", i%3), []byte(fmt.Sprint(i)))
				js.Publish(ctx, "ev.other", []byte("x"))
			}
			f, err := streamread.NewFollower(ctx, nc, streamread.FollowConfig{Stream: "EV", Filters: []string{"ev.a.>", "ev.b"}, From: 1, Direct: direct, Batch: 7})
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			go func() {
				for i := 30; i < 60; i++ {
					subj := fmt.Sprintf("ev.a.%d", i%3)
					if i%5 == 0 {
						subj = "ev.b"
					}
					js.Publish(ctx, subj, []byte(fmt.Sprint(i)))
					js.Publish(ctx, "ev.other", []byte("x"))
				}
			}()
			var got []string
			for len(got) < 60 {
				msgs, err := f.Read(ctx, 10*time.Second)
				if err != nil || msgs == nil {
					t.Fatalf("Read after %d: %v, %v", len(got), msgs, err)
				}
				for _, m := range msgs {
					got = append(got, string(m.Data))
				}
			}
			for i, g := range got {
				if g != fmt.Sprint(i) {
					t.Fatalf("message %d = %q; want %d (all: %v)", i, g, i, got)
				}
			}
			if msgs, err := f.Read(ctx, 300*time.Millisecond); err != nil || msgs != nil {
				t.Errorf("Read after the last = %v, %v; want nil, nil", msgs, err)
			}
		})
	}
}

// TestFollowNew: From 0 starts after the stored messages.
func TestFollowNew(t *testing.T) {
	nc, js, ctx := env(t)
	js.CreateStream(ctx, jetstream.StreamConfig{Name: "EV", Subjects: []string{"ev.>"}})
	js.Publish(ctx, "ev.a", []byte("old"))
	f, err := streamread.NewFollower(ctx, nc, streamread.FollowConfig{Stream: "EV", Filters: []string{"ev.>"}})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	start := time.Now()
	go js.Publish(ctx, "ev.a", []byte("new"))
	msgs, err := f.Read(ctx, 10*time.Second)
	if err != nil || len(msgs) != 1 || string(msgs[0].Data) != "new" {
		t.Fatalf("Read = %v, %v; want the new message alone", msgs, err)
	}
	if d := time.Since(start); d > streamread.DefaultPoll {
		t.Errorf("the new message came after %v; want it woken by the core message, before the poll", d)
	}
}

// TestWatchKV: the initial values (a deleted key as a marker), the nil
// mark, then later puts and deletes, as WatchAll gives them.
func TestWatchKV(t *testing.T) {
	nc, js, ctx := env(t)
	kv, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "B", History: 1})
	if err != nil {
		t.Fatal(err)
	}
	kv.Put(ctx, "a", []byte("1"))
	kv.Put(ctx, "b", []byte("1"))
	kv.Put(ctx, "a", []byte("2"))
	kv.Delete(ctx, "b")
	w, err := streamread.WatchKV(ctx, nc, "B", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	next := func() jetstream.KeyValueEntry {
		t.Helper()
		select {
		case e := <-w.Updates():
			return e
		case <-time.After(10 * time.Second):
			t.Fatal("no update within 10s")
		}
		return nil
	}
	desc := func(e jetstream.KeyValueEntry) string {
		if e == nil {
			return "<nil>"
		}
		return fmt.Sprintf("%s=%s %s", e.Key(), e.Value(), e.Operation())
	}
	var got []string
	for range 3 {
		got = append(got, desc(next()))
	}
	go func() {
		kv.Put(ctx, "c", []byte("3"))
		kv.Delete(ctx, "a")
	}()
	got = append(got, desc(next()), desc(next()))
	want := []string{"a=2 KeyValuePutOp", "b= KeyValueDeleteOp", "<nil>", "c=3 KeyValuePutOp", "a= KeyValueDeleteOp"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("updates = %q; want %q", got, want)
	}
	if err := w.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, ok := <-w.Updates(); ok {
		t.Error("Updates is open after Stop")
	}
}

// TestReadObject: an object of several chunks reads back whole; a missing
// one is ErrObject.
func TestReadObject(t *testing.T) {
	_, js, ctx := env(t)
	obs, err := js.CreateObjectStore(ctx, jetstream.ObjectStoreConfig{Bucket: "OS"})
	if err != nil {
		t.Fatal(err)
	}
	big := bytes.Repeat([]byte("0123456789abcdef"), 100_000) // 1.6 MB: 13 chunks of 128 KiB
	if _, err := obs.PutBytes(ctx, "slot/1", big); err != nil {
		t.Fatal(err)
	}
	obs.PutBytes(ctx, "empty", nil)
	got, err := streamread.ReadObject(ctx, js, "OS", "slot/1")
	if err != nil || !bytes.Equal(got, big) {
		t.Fatalf("ReadObject = %d bytes, %v; want %d bytes", len(got), err, len(big))
	}
	if got, err := streamread.ReadObject(ctx, js, "OS", "empty"); err != nil || len(got) != 0 {
		t.Errorf("ReadObject(empty) = %q, %v", got, err)
	}
	if _, err := streamread.ReadObject(ctx, js, "OS", "nope"); !errors.Is(err, streamread.ErrObject) {
		t.Errorf("ReadObject(nope) = %v; want ErrObject", err)
	}
}
