package main

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

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

// TestRunIncompatibleStream: a stream of the operator's that already takes
// the subjects of skillbus's EVENTS stream is reported at once — what is
// wrong and how to fix it — and the worker exits 1 instead of retrying
// for ever (docs/operations.md, "Provisioning errors").
func TestRunIncompatibleStream(t *testing.T) {
	srv := natsserver.StartTB(t, natsserver.Options{})
	js, err := jetstream.New(natsserver.ConnectTB(t, srv))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateStream(context.Background(), jetstream.StreamConfig{Name: "AUDIT", Subjects: []string{"events.run.>"}}); err != nil {
		t.Fatal(err)
	}
	var out servicecmdtest.Buffer
	done := make(chan int, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	start := time.Now()
	go func() {
		done <- run(ctx, []string{"--nats", srv.ClientURL(), "--shutdown-budget", "5s"}, io.Discard, &out)
	}()
	select {
	case code := <-done:
		if code != 1 {
			t.Errorf("exit code %d; want 1 (could not start)", code)
		}
	case <-time.After(servicecmdtest.Timeout):
		t.Fatalf("still running after %v: the refusal is retried; log:\n%s", servicecmdtest.Timeout, out.String())
	}
	log := out.String()
	for _, want := range []string{
		`msg="cannot provision stream EVENTS: the stream AUDIT already takes (some of) its subjects events.>, and the server gives a subject to one stream only"`,
		`fix="skillbus needs those subjects for EVENTS: take them out of the stream AUDIT (nats stream edit AUDIT) or delete that stream (nats stream rm AUDIT), or run skillbus in another NATS account"`,
		"err_code=10065",
	} {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks %s:\n%s", want, log)
		}
	}
	if strings.Contains(log, "retrying") {
		t.Errorf("the refusal was retried (after %v):\n%s", time.Since(start), log)
	}
}
