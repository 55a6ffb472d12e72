package skillface_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/skillbus/skillbus/pkg/skill"
	"github.com/skillbus/skillbus/pkg/skillface"
	"github.com/skillbus/skillbus/pkg/skillface/sessiontest"
)

func TestMemoryStoreConformance(t *testing.T) {
	sessiontest.Run(t, sessiontest.Suite{
		New: func(t *testing.T, ttl time.Duration) skillface.SessionStore {
			return skillface.NewMemoryStore(ttl)
		},
		TTL: 100 * time.Millisecond,
	})
}

func TestMemoryStoreLenForgetsExpired(t *testing.T) {
	ctx := context.Background()
	m := skillface.NewMemoryStore(50 * time.Millisecond)
	for _, id := range []string{"a", "b", "c"} {
		if _, err := m.CompareAndSet(ctx, id, []byte("v"), 0); err != nil {
			t.Fatal(err)
		}
	}
	if got := m.Len(); got != 3 {
		t.Fatalf("Len() = %d; want 3", got)
	}
	time.Sleep(80 * time.Millisecond)
	if got := m.Len(); got != 0 {
		t.Fatalf("Len() after the TTL = %d; want 0", got)
	}
	if _, _, err := m.Get(ctx, "a"); !errors.Is(err, skillface.ErrSessionNotFound) {
		t.Fatalf("Get(a) after the TTL = %v; want ErrSessionNotFound", err)
	}
}

func TestNewMemoryStoreNegativeTTLPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("NewMemoryStore(-1) did not panic")
		}
	}()
	skillface.NewMemoryStore(-1)
}

// TestTwoAssemblersShareAStore: two Assemblers (two replicas) on one store
// each see the other's activations on the next call, whatever they cached
// of the session before.
func TestTwoAssemblersShareAStore(t *testing.T) {
	store := skillface.NewMemoryStore(time.Hour)
	skills := []skill.Skill{sk("x", triggers("xray")), sk("y", triggers("yak")), sk("z", triggers("zebra"))}
	a := newAsm(t, skills, skillface.WithSessionStore(store))
	b := newAsm(t, skills, skillface.WithSessionStore(store))
	steps := []struct {
		asm  *skillface.Assembler
		say  string
		want []string
	}{
		{a, "xray", []string{"x"}},
		{b, "hello", []string{"x"}},
		{b, "yak", []string{"x", "y"}},
		{a, "hello", []string{"x", "y"}}, // a's cached state (x only) is stale
		{a, "zebra", []string{"x", "y", "z"}},
		{b, "hello", []string{"x", "y", "z"}},
	}
	for i, s := range steps {
		resp := assemble(t, s.asm, user("shared", int64(i+1), s.say))
		if !slices.Equal(resp.Active, s.want) {
			t.Fatalf("step %d (%q): active %v; want %v", i+1, s.say, resp.Active, s.want)
		}
	}
}

// TestStaleSpeculation: a replica whose last view of a session is stale
// works a call out on it, sees its compare-and-set refused, and works the
// call out again on the stored state: nothing the other replica added is
// lost.
func TestStaleSpeculation(t *testing.T) {
	store := skillface.NewMemoryStore(time.Hour)
	skills := []skill.Skill{sk("x", triggers("xray")), sk("y", triggers("yak")), sk("z", triggers("zebra"))}
	a := newAsm(t, skills, skillface.WithSessionStore(store))
	b := newAsm(t, skills, skillface.WithSessionStore(store))
	assemble(t, a, user("s", 1, "xray"))          // a's view: x
	assemble(t, b, user("s", 2, "yak"))           // stored: x, y
	resp := assemble(t, a, user("s", 3, "zebra")) // a speculates on x only
	if want := []string{"x", "y", "z"}; !slices.Equal(resp.Active, want) {
		t.Fatalf("active %v; want %v", resp.Active, want)
	}
	if resp := assemble(t, b, user("s", 4, "hi")); !slices.Equal(resp.Active, []string{"x", "y", "z"}) {
		t.Fatalf("the other replica then sees %v; want x, y, z", resp.Active)
	}
}

// blockingGets is a store whose reads wait until released: it shows which
// calls need no read.
type blockingGets struct {
	*skillface.MemoryStore
	release chan struct{}
	reads   chan string
}

func (s blockingGets) Get(ctx context.Context, id string) ([]byte, uint64, error) {
	s.reads <- id
	select {
	case <-s.release:
	case <-ctx.Done():
		return nil, 0, ctx.Err()
	}
	return s.MemoryStore.Get(ctx, id)
}

// TestSpeculativeWriteNeedsNoRead: a call that activates a skill in a
// session this replica just wrote is answered after its compare-and-set
// alone, without waiting for the read (which is still started).
func TestSpeculativeWriteNeedsNoRead(t *testing.T) {
	store := blockingGets{skillface.NewMemoryStore(time.Hour), make(chan struct{}), make(chan string, 10)}
	a := newAsm(t, []skill.Skill{sk("x", triggers("xray")), sk("y", triggers("yak"))}, skillface.WithSessionStore(store))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	defer close(store.release)
	// A new session with an activation: created at once.
	r1, err := a.Assemble(ctx, user("s", 1, "xray"))
	if err != nil || !slices.Equal(r1.Activated, []string{"x"}) {
		t.Fatalf("round 1 = %v, %v; want x activated", r1.Activated, err)
	}
	r2, err := a.Assemble(ctx, user("s", 2, "yak"))
	if err != nil || !slices.Equal(r2.Active, []string{"x", "y"}) || !slices.Equal(r2.Activated, []string{"y"}) {
		t.Fatalf("round 2 = active %v activated %v, %v; want x, y with y activated", r2.Active, r2.Activated, err)
	}
	for i := range 2 { // each call started its read, and returned without it
		select {
		case <-store.reads:
		case <-ctx.Done():
			t.Fatalf("only %d reads started; want 2", i)
		}
	}
}
