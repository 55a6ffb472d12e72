package seqworker

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// TestRecordCancelContextEnded: a cancel whose request's time ran out
// before its write says so (and wraps the context's error), instead of
// saying that the run changed too often.
func TestRecordCancelContextEnded(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, _, err := (&Worker{}).recordCancel(ctx, "run-1", "me", "")
	if err == nil || !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "time ran out") || strings.Contains(err.Error(), "too often") {
		t.Fatalf("recordCancel with an ended context: %v; want the time ran out, wrapping context.Canceled", err)
	}
}
