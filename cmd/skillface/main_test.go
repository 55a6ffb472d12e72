package main

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/skillbus/skillbus/internal/servicecmd/servicecmdtest"
)

func TestRunExitCodes(t *testing.T) {
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"zero bodies", []string{"--session-bodies", "0"}, 2, "--session-bodies must be positive"},
		{"tiny entry budget", []string{"--entry-chars", "10"}, 2, "EntryChars 10 is below the minimum"},
		{"short session ttl", []string{"--session-ttl", "10ms"}, 2, "SessionsTTL"},
		{"negative replicas", []string{"--replicas", "-1"}, 2, "--session-ttl and --replicas must not be negative"},
		{"bad log level", []string{"--log-level", "loud"}, 2, `skillface: --log-level "loud"`},
		{"stray argument", []string{"extra"}, 2, "unexpected arguments"},
		{"unknown flag", []string{"--bodies", "3"}, 2, "flag provided but not defined"},
		{"version", []string{"--version"}, 0, "skillface 0.1.0\n"},
		{"help", []string{"-h"}, 0, "Usage: skillface [flags]\n\nEnriches prompt-assembly requests"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			servicecmdtest.ExpectExit(t, run, tc.args, tc.code, tc.want)
		})
	}
}

// TestEmbeddedRunStops: with --embedded the service starts on its own
// server and stops cleanly (exit code 0) when the context ends.
func TestEmbeddedRunStops(t *testing.T) {
	args := []string{"--embedded", "--embedded-store", t.TempDir(), "--memory"}
	code, out := servicecmdtest.StartStop(t, func(ctx context.Context, stderr io.Writer) int {
		return run(ctx, args, stderr)
	}, "skillface started")
	if code != 0 {
		t.Fatalf("run exited %d; want 0; log:\n%s", code, out)
	}
	if !strings.Contains(out, "skillface stopped") {
		t.Fatalf("log lacks the stop message:\n%s", out)
	}
}
