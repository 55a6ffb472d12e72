package main

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/skillbus/skillbus/internal/servicecmd/servicecmdtest"
)

func TestRunUsageErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"unknown flag", []string{"--nope"}, "flag provided but not defined"},
		{"two dirs", []string{"a", "b"}, "one DIR at most"},
		{"dir twice", []string{"--dir", "a", "b"}, `DIR given twice (--dir "a" and "b")`},
		{"missing dir", []string{"/does/not/exist"}, "Dir"},
		{"bad log level", []string{"--log-level", "loud"}, `registry: --log-level "loud"`},
		{"bad replicas", []string{"--replicas", "9"}, "Replicas"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			servicecmdtest.ExpectExit(t, run, tt.args, 2, tt.want)
		})
	}
}

// TestRunEmbeddedGracefulStop runs the real main logic with --embedded
// over examples/, then cancels (as SIGTERM does) and expects exit 0 after
// the registry stopped and the connection drained.
func TestRunEmbeddedGracefulStop(t *testing.T) {
	args := []string{"--embedded", "--embedded-store", t.TempDir(), "--log-json", "../../examples"}
	code, out := servicecmdtest.StartStop(t, func(ctx context.Context, stderr io.Writer) int {
		return run(ctx, args, stderr)
	}, "registry started")
	if code != 0 {
		t.Fatalf("exit code %d; want 0; log:\n%s", code, out)
	}
	if !strings.Contains(out, "registry stopped") {
		t.Errorf("log lacks the stop line:\n%s", out)
	}
}
