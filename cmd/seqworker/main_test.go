package main

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/skillbus/skillbus/internal/natsserver"
	"github.com/skillbus/skillbus/internal/servicecmd/servicecmdtest"
)

func TestRunUsageErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"unknown flag", []string{"--nope"}, "unknown flag --nope"},
		{"stray argument", []string{"extra"}, `seqworker: unexpected arguments ["extra"]`},
		{"bad concurrency", []string{"--concurrency", "-3"}, `seqworker: --concurrency "-3": want 1 to 10000`},
		{"bad ack wait", []string{"--ack-wait", "-5s"}, `seqworker: --ack-wait "-5s": want at least 1s`},
		{"slot limits", []string{"--run-slots-limit-bytes", "5", "--slot-max-bytes", "9"}, `seqworker: --run-slots-limit-bytes "5" is below --slot-max-bytes "9"`},
		{"bad health address", []string{"--health-addr", "garbage"}, `seqworker: --health-addr "garbage": missing port in address`},
		{"bad log level", []string{"--log-level", "loud"}, `seqworker: --log-level "loud"`},
		{"shutdown-timeout replaced by the budget", []string{"--shutdown-timeout", "5s"}, "unknown flag --shutdown-timeout"},
		{"tiny budget", []string{"--shutdown-budget", "10ms"}, `--shutdown-budget "10ms": want at least 1s`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := servicecmdtest.ExpectExit(t, run, tt.args, 2, tt.want)
			for _, leak := range []string{"Provision", "events:", "invalid configuration", "AckWait", "Concurrency"} {
				if strings.Contains(out, leak) {
					t.Errorf("%q: the message shows the Go name %q: %s", tt.args, leak, out)
				}
			}
		})
	}
}

// TestRunGracefulStop: the worker starts on a server and stops cleanly
// (exit 0) when the context ends.
func TestRunGracefulStop(t *testing.T) {
	srv := natsserver.StartTB(t, natsserver.Options{})
	args := []string{"--nats", srv.ClientURL(), "--memory", "--shutdown-budget", "5s"}
	code, out := servicecmdtest.StartStop(t, func(ctx context.Context, stderr io.Writer) int {
		return run(ctx, args, io.Discard, stderr)
	}, `msg=ready`)
	if code != 0 {
		t.Fatalf("exit code %d; want 0; log:\n%s", code, out)
	}
	for _, want := range []string{`msg="seqworker started"`, `msg="seqworker stopped"`} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %s:\n%s", want, out)
		}
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
