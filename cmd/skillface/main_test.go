package main

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/skillbus/skillbus/internal/natsserver"
	"github.com/skillbus/skillbus/internal/servicecmd/servicecmdtest"
	"github.com/skillbus/skillbus/internal/version"
)

func TestRunExitCodes(t *testing.T) {
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"zero bodies", []string{"--session-bodies", "0"}, 2, "--session-bodies must be positive"},
		{"tiny entry budget", []string{"--entry-chars", "10"}, 2, `skillface: --entry-chars "10" is below the minimum`},
		{"short session ttl", []string{"--session-ttl", "10ms"}, 2, `skillface: --session-ttl "10ms": want at least 1s`},
		{"negative replicas", []string{"--replicas", "-1"}, 2, "--session-ttl and --replicas must not be negative"},
		{"bad log level", []string{"--log-level", "loud"}, 2, `skillface: --log-level "loud"`},
		{"stray argument", []string{"extra"}, 2, "unexpected arguments"},
		{"unknown flag", []string{"--bodies", "3"}, 2, "unknown flag --bodies"},
		{"version", []string{"--version"}, 0, "skillface " + version.String() + "\n"},
		{"help", []string{"-h"}, 0, "Usage: skillface [flags]\n\nEnriches prompt-assembly requests"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			servicecmdtest.ExpectExit(t, run, tc.args, tc.code, tc.want)
		})
	}
}

// TestRunEnvironment: every flag comes from SKILLBUS_<FLAG>; a malformed
// value names its variable; the command line wins over the environment.
func TestRunEnvironment(t *testing.T) {
	t.Setenv("SKILLBUS_BODY_BYTES", "lots")
	servicecmdtest.ExpectExit(t, run, nil, 2, `skillface: SKILLBUS_BODY_BYTES="lots": not a whole number; want one such as 10 (the environment form of --body-bytes`)
	t.Setenv("SKILLBUS_BODY_BYTES", "0")
	servicecmdtest.ExpectExit(t, run, nil, 2, "--body-bytes must be positive")
	servicecmdtest.ExpectExit(t, run, []string{"--body-bytes", "5", "--entry-chars", "10"}, 2, `skillface: --entry-chars "10" is below the minimum`)
}

// TestRunStops: the service starts on a server and stops cleanly (exit
// code 0) when the context ends.
func TestRunStops(t *testing.T) {
	srv := natsserver.StartTB(t, natsserver.Options{})
	args := []string{"--nats", srv.ClientURL(), "--memory"}
	code, out := servicecmdtest.StartStop(t, func(ctx context.Context, stderr io.Writer) int {
		return run(ctx, args, io.Discard, stderr)
	}, "msg=ready")
	if code != 0 {
		t.Fatalf("run exited %d; want 0; log:\n%s", code, out)
	}
	if !strings.Contains(out, "skillface stopped") {
		t.Fatalf("log lacks the stop message:\n%s", out)
	}
}

// TestRunProvisionsOnce: the command provisions its streams and buckets
// once, creating each, and its service's start does not provision them
// again (a second, update-then-create round without retries is what timed
// out on a fresh 3-node cluster: docs/operations.md, "Start-up").
func TestRunProvisionsOnce(t *testing.T) {
	calls := servicecmdtest.ProvisionsOnce(t, run)
	if len(calls) == 0 {
		t.Fatal("no JetStream stream was created: the test saw nothing")
	}
}
