package tool

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestCallCtxDeadline(t *testing.T) {
	c := newCallCtx(context.Background(), time.Now().Add(50*time.Millisecond))
	defer c.cancel(context.Canceled)
	if err := c.Err(); err != nil {
		t.Fatalf("Err before the deadline = %v; want nil", err)
	}
	child, cancel := context.WithCancel(c) // derived contexts follow it
	defer cancel()
	select {
	case <-c.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("Done not closed 5 s after a 50 ms deadline")
	}
	if err := c.Err(); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Err after the deadline = %v; want DeadlineExceeded", err)
	}
	select {
	case <-child.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("a context derived from the call's was not cancelled at the deadline")
	}
	if d, ok := c.Deadline(); !ok || d.IsZero() {
		t.Errorf("Deadline() = %v, %v; want the deadline", d, ok)
	}
}

func TestCallCtxDeadlineWithoutDone(t *testing.T) {
	c := newCallCtx(context.Background(), time.Now().Add(-time.Millisecond))
	defer c.cancel(context.Canceled)
	if err := c.Err(); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Err past the deadline, Done never asked = %v; want DeadlineExceeded", err)
	}
	select {
	case <-c.Done():
	default:
		t.Fatal("Done after Err reported the deadline is not closed")
	}
}

func TestCallCtxParentAndEnd(t *testing.T) {
	parent, stop := context.WithCancel(context.Background())
	c := newCallCtx(parent, time.Now().Add(time.Hour))
	done := c.Done()
	stop()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Done not closed after the parent was cancelled")
	}
	if err := c.Err(); !errors.Is(err, context.Canceled) {
		t.Errorf("Err after the parent's cancel = %v; want Canceled", err)
	}

	// The end of the call (cancel) closes Done and ends a derived context,
	// whether Done was asked for before or not.
	for _, askFirst := range []bool{true, false} {
		c := newCallCtx(context.Background(), time.Now().Add(time.Hour))
		if askFirst {
			c.Done()
		}
		c.cancel(context.Canceled)
		c.cancel(context.Canceled) // twice is fine
		select {
		case <-c.Done():
		default:
			t.Errorf("askFirst=%v: Done not closed after the call ended", askFirst)
		}
		if err := c.Err(); !errors.Is(err, context.Canceled) {
			t.Errorf("askFirst=%v: Err after the call ended = %v; want Canceled", askFirst, err)
		}
	}
	// Values come from the parent.
	type key struct{}
	c = newCallCtx(context.WithValue(context.Background(), key{}, "v"), time.Now().Add(time.Hour))
	defer c.cancel(context.Canceled)
	if got := c.Value(key{}); got != "v" {
		t.Errorf("Value = %v; want the parent's v", got)
	}
}
