package main

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"time"
)

// syncBuffer is a bytes.Buffer safe for the logger and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestBadFlags(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"zero bodies", []string{"--session-bodies", "0"}, "--session-bodies must be positive"},
		{"tiny entry budget", []string{"--entry-chars", "10"}, "EntryChars 10 is below the minimum"},
		{"short session ttl", []string{"--session-ttl", "10ms"}, "SessionsTTL"},
		{"bad log level", []string{"--log-level", "loud"}, `--log-level "loud"`},
		{"stray argument", []string{"extra"}, "unexpected arguments"},
		{"unknown flag", []string{"--bodies", "3"}, "flag provided but not defined"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out syncBuffer
			if code := run(context.Background(), tc.args, &out); code != 2 {
				t.Fatalf("run(%q) = %d; want 2", tc.args, code)
			}
			if !strings.Contains(out.String(), tc.want) {
				t.Fatalf("run(%q) said %q; want it to contain %q", tc.args, out.String(), tc.want)
			}
		})
	}
}

// TestEmbeddedRunStops: with --embedded the service starts on its own
// server and stops cleanly (exit code 0) when the context ends.
func TestEmbeddedRunStops(t *testing.T) {
	var out syncBuffer
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() { done <- run(ctx, []string{"--embedded", "--embedded-store", t.TempDir(), "--memory"}, &out) }()
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(out.String(), "skillface started") {
		if time.Now().After(deadline) {
			cancel()
			t.Fatalf("no start message in 20 s; log:\n%s", out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("run exited %d; want 0; log:\n%s", code, out.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("run did not stop within 20 s of its context ending")
	}
	if !strings.Contains(out.String(), "skillface stopped") {
		t.Fatalf("log lacks the stop message:\n%s", out.String())
	}
}
