package skillface_test

import (
	"context"
	"errors"
	"testing"
	"time"

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
