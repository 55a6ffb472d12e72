// Package servicecmdtest helps the tests of the service commands (the
// mains built on internal/servicecmd): a log buffer the service and the
// test may share, and a start-then-stop run of a command.
package servicecmdtest

import (
	"bytes"
	"context"
	"io"
	"strings"
	"sync"
	"testing"
	"time"
)

// Buffer is an io.Writer that a logger and a test may use at once; the
// zero value is empty and ready. A test waits for a line with WaitFor
// (or Changed), woken by each Write rather than polling on a timer.
type Buffer struct {
	mu      sync.Mutex // mu guards b and written
	b       bytes.Buffer
	written chan struct{} // closed by the next Write; nil until Changed asks
}

// Write appends p and wakes the waiters of Changed; it never fails.
func (s *Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.written != nil {
		close(s.written)
		s.written = nil
	}
	return s.b.Write(p)
}

// Changed returns everything written so far and a channel closed by the
// next Write, for a test that waits for some text in a select with its
// own other cases.
func (s *Buffer) Changed() (text string, next <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.written == nil {
		s.written = make(chan struct{})
	}
	return s.b.String(), s.written
}

// WaitFor waits until the text written contains want and returns the
// text. It fails tb, showing the text, when want does not appear within
// limit or when a code comes on exited first (the service exited; nil:
// it is not watched).
func (s *Buffer) WaitFor(tb testing.TB, want string, limit time.Duration, exited <-chan int) string {
	tb.Helper()
	timeout := time.NewTimer(limit)
	defer timeout.Stop()
	for {
		text, next := s.Changed()
		if strings.Contains(text, want) {
			return text
		}
		select {
		case <-next:
		case code := <-exited:
			tb.Fatalf("exited %d before logging %q; output:\n%s", code, want, s.String())
		case <-timeout.C:
			tb.Fatalf("no %q in %v; output:\n%s", want, limit, s.String())
		}
	}
}

// String returns everything written so far.
func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Timeout bounds each wait of StartStop: for the ready line, and for the
// exit after the context ends.
const Timeout = 20 * time.Second

// StartStop runs run in a goroutine with a fresh context and a Buffer as
// its output, waits until the output contains ready, cancels the context
// (as SIGTERM does through servicecmd.SignalContext), and returns run's exit
// code and everything it wrote. It fails tb, showing the output, when
// ready does not appear or run does not return within Timeout.
func StartStop(tb testing.TB, run func(ctx context.Context, stderr io.Writer) int, ready string) (code int, output string) {
	tb.Helper()
	var out Buffer
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan int, 1)
	go func() { done <- run(ctx, &out) }()
	out.WaitFor(tb, ready, Timeout, done)
	cancel()
	select {
	case code = <-done:
		return code, out.String()
	case <-time.After(Timeout):
		tb.Fatalf("no exit %v after the context ended; output:\n%s", Timeout, out.String())
		return 0, ""
	}
}

// ExpectExit calls run with args, a background context and fresh Buffers
// for stdout and stderr, and fails tb unless run returns code and its
// output (stdout then stderr) contains want. run has the shape of a
// service command's run function.
func ExpectExit(tb testing.TB, run func(ctx context.Context, args []string, stdout, stderr io.Writer) int, args []string, code int, want string) (output string) {
	tb.Helper()
	var stdout, stderr Buffer
	got := run(context.Background(), args, &stdout, &stderr)
	out := stdout.String() + stderr.String()
	if got != code {
		tb.Errorf("run(%q) = %d; want %d; output:\n%s", args, got, code, out)
	}
	if !strings.Contains(out, want) {
		tb.Errorf("run(%q) wrote %q; want it to contain %q", args, out, want)
	}
	return out
}
