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
		{"stray argument", []string{"extra"}, `seqworker: unexpected arguments ["extra"] (flags only)`},
		{"bad concurrency", []string{"--concurrency", "-3"}, "Concurrency = -3; want 1 to 10000"},
		{"bad log level", []string{"--log-level", "loud"}, `seqworker: --log-level "loud"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			servicecmdtest.ExpectExit(t, run, tt.args, 2, tt.want)
		})
	}
}

// TestRunEmbeddedGracefulStop: with --embedded the worker starts on its
// own server and stops cleanly (exit 0) when the context ends.
func TestRunEmbeddedGracefulStop(t *testing.T) {
	args := []string{"--embedded", "--embedded-store", t.TempDir(), "--memory", "--shutdown-timeout", "1s"}
	code, out := servicecmdtest.StartStop(t, func(ctx context.Context, stderr io.Writer) int {
		return run(ctx, args, stderr)
	}, "seqworker started")
	if code != 0 {
		t.Fatalf("exit code %d; want 0; log:\n%s", code, out)
	}
	if !strings.Contains(out, "seqworker stopped") {
		t.Errorf("log lacks the stop line:\n%s", out)
	}
}
