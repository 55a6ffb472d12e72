// Package sessiontest is the conformance suite for skillface.SessionStore
// implementations: the in-memory store of pkg/skillface and the JetStream KV
// store of cmd/skillface run the same tests (STYLE.md: one conformance suite
// per interface).
//
//	func TestKVStore(t *testing.T) {
//		sessiontest.Run(t, sessiontest.Suite{
//			New: func(t *testing.T, ttl time.Duration) skillface.SessionStore { … },
//			TTL: time.Second,
//		})
//	}
package sessiontest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/skillbus/skillbus/pkg/skillface"
)

// Suite describes the store under test.
type Suite struct {
	// New returns an empty store whose sessions expire ttl after their last
	// write (ttl 0 = never). Called once per subtest; use t.Cleanup to
	// release it.
	New func(t *testing.T, ttl time.Duration) skillface.SessionStore
	// TTL is the expiry the TTL subtest asks for; the subtest waits up to
	// Wait for a session to expire. TTL 0 skips the subtest.
	TTL time.Duration
	// Wait bounds how long an expiry may lag behind TTL; 0 means 5×TTL.
	Wait time.Duration
	// Writers is the number of concurrent writers in the concurrency
	// subtest; 0 means 16.
	Writers int
}

// Run runs every conformance subtest against s.
func Run(t *testing.T, s Suite) {
	t.Helper()
	if s.New == nil {
		t.Fatal("sessiontest.Suite.New is nil")
	}
	t.Run("GetMissing", func(t *testing.T) { testGetMissing(t, s) })
	t.Run("CreateThenGet", func(t *testing.T) { testCreateThenGet(t, s) })
	t.Run("CompareAndSet", func(t *testing.T) { testCompareAndSet(t, s) })
	t.Run("Isolation", func(t *testing.T) { testIsolation(t, s) })
	t.Run("AnySessionID", func(t *testing.T) { testAnySessionID(t, s) })
	t.Run("ConcurrentIncrements", func(t *testing.T) { testConcurrent(t, s) })
	t.Run("CanceledContext", func(t *testing.T) { testCanceled(t, s) })
	t.Run("TTL", func(t *testing.T) { testTTL(t, s) })
}

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func testGetMissing(t *testing.T, s Suite) {
	st := s.New(t, 0)
	v, rev, err := st.Get(ctxFor(t), "nobody")
	if !errors.Is(err, skillface.ErrSessionNotFound) {
		t.Fatalf("Get(%q) = %q, %d, %v; want ErrSessionNotFound", "nobody", v, rev, err)
	}
}

func testCreateThenGet(t *testing.T, s Suite) {
	ctx, st := ctxFor(t), s.New(t, 0)
	val := []byte(`{"round":1}`)
	rev, err := st.CompareAndSet(ctx, "s1", val, 0)
	if err != nil {
		t.Fatalf("CompareAndSet(s1, rev 0) on an empty store: %v", err)
	}
	if rev == 0 {
		t.Fatalf("CompareAndSet returned revision 0; want a non-zero revision")
	}
	val[2] = 'X' // the store must keep its own copy
	got, grev, err := st.Get(ctx, "s1")
	if err != nil {
		t.Fatalf("Get(s1) after create: %v", err)
	}
	if string(got) != `{"round":1}` || grev != rev {
		t.Fatalf("Get(s1) = %q, %d; want %q, %d", got, grev, `{"round":1}`, rev)
	}
	if _, err := st.CompareAndSet(ctx, "s1", []byte("again"), 0); !errors.Is(err, skillface.ErrRevisionMismatch) {
		t.Fatalf("second create of s1 = %v; want ErrRevisionMismatch", err)
	}
}

func testCompareAndSet(t *testing.T, s Suite) {
	ctx, st := ctxFor(t), s.New(t, 0)
	r1, err := st.CompareAndSet(ctx, "s", []byte("one"), 0)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := st.CompareAndSet(ctx, "s", []byte("two"), r1)
	if err != nil {
		t.Fatalf("CompareAndSet(s, rev %d = current): %v", r1, err)
	}
	if r2 <= r1 {
		t.Fatalf("revision after update = %d; want greater than %d", r2, r1)
	}
	if _, err := st.CompareAndSet(ctx, "s", []byte("stale"), r1); !errors.Is(err, skillface.ErrRevisionMismatch) {
		t.Fatalf("CompareAndSet with stale revision %d = %v; want ErrRevisionMismatch", r1, err)
	}
	if _, err := st.CompareAndSet(ctx, "s", []byte("future"), r2+1000); !errors.Is(err, skillface.ErrRevisionMismatch) {
		t.Fatalf("CompareAndSet with unknown revision %d = %v; want ErrRevisionMismatch", r2+1000, err)
	}
	got, rev, err := st.Get(ctx, "s")
	if err != nil || string(got) != "two" || rev != r2 {
		t.Fatalf("Get(s) = %q, %d, %v; want %q, %d, nil (a failed compare-and-set must not write)", got, rev, err, "two", r2)
	}
}

func testIsolation(t *testing.T, s Suite) {
	ctx, st := ctxFor(t), s.New(t, 0)
	ra, err := st.CompareAndSet(ctx, "a", []byte("A"), 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.CompareAndSet(ctx, "b", []byte("B"), 0); err != nil {
		t.Fatalf("create b after a: %v (sessions must not share revisions for compare-and-set)", err)
	}
	if _, err := st.CompareAndSet(ctx, "a", []byte("A2"), ra); err != nil {
		t.Fatalf("update a at its own revision %d after writing b: %v", ra, err)
	}
	got, _, err := st.Get(ctx, "b")
	if err != nil || string(got) != "B" {
		t.Fatalf("Get(b) = %q, %v; want %q", got, err, "B")
	}
}

// testConcurrent: writers increment a counter with read-modify-CAS loops;
// no increment may be lost.
func testConcurrent(t *testing.T, s Suite) {
	ctx, st := ctxFor(t), s.New(t, 0)
	writers, each := s.Writers, 20
	if writers == 0 {
		writers = 16
	}
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				for {
					v, rev, err := st.Get(ctx, "counter")
					n := 0
					switch {
					case errors.Is(err, skillface.ErrSessionNotFound):
						rev = 0
					case err != nil:
						errs <- err
						return
					default:
						if _, err := fmt.Sscan(string(v), &n); err != nil {
							errs <- fmt.Errorf("stored value %q is not the counter written: %v", v, err)
							return
						}
					}
					_, err = st.CompareAndSet(ctx, "counter", []byte(fmt.Sprint(n+1)), rev)
					if err == nil {
						break
					}
					if !errors.Is(err, skillface.ErrRevisionMismatch) {
						errs <- err
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	v, _, err := st.Get(ctx, "counter")
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprint(writers * each); !bytes.Equal(v, []byte(want)) {
		t.Fatalf("counter after %d writers × %d increments = %s; want %s (an update was lost)", writers, each, v, want)
	}
}

func testCanceled(t *testing.T, s Suite) {
	st := s.New(t, 0)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := st.Get(ctx, "x"); !errors.Is(err, context.Canceled) {
		t.Errorf("Get with a canceled context = %v; want context.Canceled", err)
	}
	if _, err := st.CompareAndSet(ctx, "x", []byte("v"), 0); !errors.Is(err, context.Canceled) {
		t.Errorf("CompareAndSet with a canceled context = %v; want context.Canceled", err)
	}
}

func testTTL(t *testing.T, s Suite) {
	if s.TTL == 0 {
		t.Skip("Suite.TTL is 0: expiry not tested")
	}
	wait := s.Wait
	if wait == 0 {
		wait = 5 * s.TTL
	}
	ctx, st := ctxFor(t), s.New(t, s.TTL)
	rev, err := st.CompareAndSet(ctx, "short", []byte("v"), 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.Get(ctx, "short"); err != nil {
		t.Fatalf("Get right after write: %v; want the value (TTL %v)", err, s.TTL)
	}
	deadline := time.Now().Add(s.TTL + wait)
	for {
		_, _, err := st.Get(ctx, "short")
		if errors.Is(err, skillface.ErrSessionNotFound) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("session still present %v after its write (TTL %v)", s.TTL+wait, s.TTL)
		}
		time.Sleep(s.TTL / 10)
	}
	if _, err := st.CompareAndSet(ctx, "short", []byte("stale"), rev); !errors.Is(err, skillface.ErrRevisionMismatch) {
		t.Fatalf("update of an expired session at its old revision = %v; want ErrRevisionMismatch", err)
	}
	if _, err := st.CompareAndSet(ctx, "short", []byte("new"), 0); err != nil {
		t.Fatalf("create after expiry: %v; want success", err)
	}
}

// testAnySessionID: session ids come from agent runtimes and may hold any
// characters; a store with restricted keys (JetStream KV) must encode them,
// without two ids sharing a key.
func testAnySessionID(t *testing.T, s Suite) {
	ctx, st := ctxFor(t), s.New(t, 0)
	ids := []string{"user:42", "a b", "séance/1", "..", "a.b", "a_b", "A.B", "chat#7?x=1", "*", ">", "ünïcödé 会话"}
	for _, id := range ids {
		if _, err := st.CompareAndSet(ctx, id, []byte("v:"+id), 0); err != nil {
			t.Fatalf("create session %q: %v", id, err)
		}
	}
	for _, id := range ids {
		v, _, err := st.Get(ctx, id)
		if err != nil || string(v) != "v:"+id {
			t.Errorf("Get(%q) = %q, %v; want %q", id, v, err, "v:"+id)
		}
	}
}
