package main

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"time"
)

// syncBuffer is a bytes.Buffer safe for the logger and the test to share.
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

func TestRunUsageErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"unknown flag", []string{"--nope"}, "flag provided but not defined"},
		{"two dirs", []string{"a", "b"}, "one DIR at most"},
		{"missing dir", []string{"/does/not/exist"}, "Dir"},
		{"bad log level", []string{"--log-level", "loud"}, "--log-level"},
		{"bad replicas", []string{"--replicas", "9"}, "Replicas"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out syncBuffer
			if code := run(context.Background(), tt.args, &out); code != 2 {
				t.Fatalf("run(%q) = %d; want 2 (usage)", tt.args, code)
			}
			if !strings.Contains(out.String(), tt.want) {
				t.Fatalf("run(%q) printed %q; want it to mention %q", tt.args, out.String(), tt.want)
			}
		})
	}
}

// TestRunEmbeddedGracefulStop runs the real main logic with --embedded
// over examples/, then cancels (as SIGTERM does) and expects exit 0 after
// the registry stopped and the connection drained.
func TestRunEmbeddedGracefulStop(t *testing.T) {
	var out syncBuffer
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"--embedded", "--embedded-store", t.TempDir(), "--log-json", "../../examples"}, &out)
	}()
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(out.String(), "registry started") {
		if time.Now().After(deadline) {
			cancel()
			t.Fatalf("registry did not start; log:\n%s", out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("exit code %d; want 0; log:\n%s", code, out.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("no exit 20s after cancel; log:\n%s", out.String())
	}
	if !strings.Contains(out.String(), "registry stopped") {
		t.Errorf("log lacks the stop line:\n%s", out.String())
	}
}
