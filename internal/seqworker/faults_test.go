package seqworker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// TestPersistRetriesAcrossAReconnect: a try in flight when the connection
// comes back is cut short (its reply was lost with the old connection)
// and made again at once — the cut is a passing failure, not an error to
// hand the run back for.
func TestPersistRetriesAcrossAReconnect(t *testing.T) {
	w := &Worker{log: slog.New(slog.NewTextHandler(io.Discard, nil)), conn: newConnWatch()}
	var tries atomic.Int32
	started := make(chan struct{}, 1)
	done := make(chan error, 1)
	go func() {
		done <- w.persist(context.Background(), "test write", func(ctx context.Context) error {
			if tries.Add(1) == 1 {
				started <- struct{}{}
				<-ctx.Done() // a request whose reply never comes
				return ctx.Err()
			}
			return nil
		})
	}()
	<-started
	start := time.Now()
	w.conn.reconnected()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("persist = %v; want nil after the second try", err)
		}
	case <-time.After(persistTry / 2):
		t.Fatalf("persist still waiting %v after the reconnect; want the try cut short at once", persistTry/2)
	}
	if n := tries.Load(); n != 2 {
		t.Errorf("op tried %d times; want 2", n)
	}
	t.Logf("tried again %v after the reconnect", time.Since(start).Round(time.Millisecond))
}

// TestPersistStopsOnLastingErrors: an error that is not passing is
// returned at once; the caller's context ending stops the retries.
func TestPersistStopsOnLastingErrors(t *testing.T) {
	w := &Worker{log: slog.New(slog.NewTextHandler(io.Discard, nil)), conn: newConnWatch()}
	var tries atomic.Int32
	err := w.persist(context.Background(), "test write", func(context.Context) error {
		tries.Add(1)
		return fmt.Errorf("wrapped: %w", errConflict)
	})
	if !errors.Is(err, errConflict) || tries.Load() != 1 {
		t.Errorf("persist(conflict) = %v after %d tries; want the conflict after 1", err, tries.Load())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	tries.Store(0)
	err = w.persist(ctx, "test write", func(context.Context) error {
		tries.Add(1)
		return nats.ErrTimeout
	})
	if !errors.Is(err, context.DeadlineExceeded) || tries.Load() < 2 {
		t.Errorf("persist(timeouts) = %v after %d tries; want retries until the context ended", err, tries.Load())
	}
}

func TestTransient(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{nats.ErrTimeout, true},
		{context.DeadlineExceeded, true},
		{nats.ErrNoResponders, true},
		{jetstream.ErrNoStreamResponse, true},
		{nats.ErrDisconnected, true},
		{&jetstream.APIError{Code: 503, ErrorCode: 10008, Description: "JetStream system temporarily unavailable"}, true},
		{&jetstream.APIError{Code: 400, Description: "bad request"}, false},
		{fmt.Errorf("x: %w", errConflict), false},
		{errStateTooLarge, false},
		{&terminalError{errors.New("bad")}, false},
		{context.Canceled, false},
		{nats.ErrConnectionClosed, false},
		{jetstream.ErrKeyNotFound, false},
	} {
		if got := transient(tc.err); got != tc.want {
			t.Errorf("transient(%v) = %v; want %v", tc.err, got, tc.want)
		}
	}
}
