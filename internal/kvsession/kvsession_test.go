package kvsession_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillbus/skillbus/internal/kvsession"
	"github.com/skillbus/skillbus/internal/natsserver"
	"github.com/skillbus/skillbus/pkg/events"
	"github.com/skillbus/skillbus/pkg/skillface"
	"github.com/skillbus/skillbus/pkg/skillface/sessiontest"
)

// TestConformance runs the SessionStore conformance suite against the KV
// store on a real embedded JetStream server, one fresh bucket per subtest.
func TestConformance(t *testing.T) {
	srv := natsserver.StartTB(t, natsserver.Options{})
	nc := natsserver.ConnectTB(t, srv)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	var n atomic.Int64
	sessiontest.Run(t, sessiontest.Suite{
		New: func(t *testing.T, ttl time.Duration) skillface.SessionStore {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			kv, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{
				Bucket:  fmt.Sprintf("SESSIONS_TEST_%d", n.Add(1)),
				History: 1,
				TTL:     ttl,
			})
			if err != nil {
				t.Fatalf("create bucket: %v", err)
			}
			return kvsession.New(kv)
		},
		TTL: time.Second,
	})
}

// TestConformanceDirect runs the conformance suite against the store with
// direct gets (NewDirect), the one skillface uses.
func TestConformanceDirect(t *testing.T) {
	srv := natsserver.StartTB(t, natsserver.Options{})
	nc := natsserver.ConnectTB(t, srv)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	var n atomic.Int64
	sessiontest.Run(t, sessiontest.Suite{
		New: func(t *testing.T, ttl time.Duration) skillface.SessionStore {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			bucket := fmt.Sprintf("SESSIONS_DIRECT_%d", n.Add(1))
			kv, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: bucket, History: 1, TTL: ttl})
			if err != nil {
				t.Fatalf("create bucket: %v", err)
			}
			return kvsession.NewDirect(kv, nc, bucket)
		},
		TTL: time.Second,
	})
}

func TestKey(t *testing.T) {
	tests := []struct {
		name, id, want string
		err            error
	}{
		{"plain id is its own key", "user-42", "user-42", nil},
		{"dots are kept", "a.b", "a.b", nil},
		{"space is encoded", "a b", "=YSBi", nil},
		{"wildcard is encoded", ">", "=Pg", nil},
		{"empty id", "", "", kvsession.ErrSessionID},
		{"longest id", strings.Repeat("x", kvsession.MaxIDBytes), strings.Repeat("x", kvsession.MaxIDBytes), nil},
		{"too long", strings.Repeat("x", kvsession.MaxIDBytes+1), "", kvsession.ErrSessionID},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := kvsession.Key(tc.id)
			if !errors.Is(err, tc.err) || got != tc.want {
				t.Fatalf("Key(%.20q) = %q, %v; want %q, %v", tc.id, got, err, tc.want, tc.err)
			}
		})
	}
}

// TestSessionsBucket uses the bucket as events.Provision creates it: a
// session written through the store is readable under its encoded key, and
// an over-long id fails before touching the bucket.
func TestSessionsBucket(t *testing.T) {
	srv := natsserver.StartTB(t, natsserver.Options{})
	nc := natsserver.ConnectTB(t, srv)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := events.Provision(ctx, js, events.Options{}); err != nil {
		t.Fatal(err)
	}
	kv, err := js.KeyValue(ctx, events.BucketSessions)
	if err != nil {
		t.Fatal(err)
	}
	st := kvsession.New(kv)
	rev, err := st.CompareAndSet(ctx, "chat #7", []byte(`{"round":1}`), 0)
	if err != nil {
		t.Fatal(err)
	}
	e, err := kv.Get(ctx, events.KeyFor("chat #7"))
	if err != nil || string(e.Value()) != `{"round":1}` || e.Revision() != rev {
		t.Fatalf("bucket entry for %q = %v, %v; want the value at revision %d", "chat #7", e, err, rev)
	}
	long := strings.Repeat("s", kvsession.MaxIDBytes+1)
	if _, err := st.CompareAndSet(ctx, long, []byte("x"), 0); !errors.Is(err, kvsession.ErrSessionID) {
		t.Fatalf("CompareAndSet with a %d-byte id = %v; want ErrSessionID", len(long), err)
	}
	if _, _, err := st.Get(ctx, long); !errors.Is(err, kvsession.ErrSessionID) {
		t.Fatalf("Get with a %d-byte id = %v; want ErrSessionID", len(long), err)
	}
}
