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

func TestRunUsageErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"unknown flag", []string{"--nope"}, 2, "unknown flag --nope"},
		{"two dirs", []string{"a", "b"}, 2, `registry: at most 1 argument(s), got ["a" "b"]`},
		{"dir twice", []string{"--dir", "a", "b"}, 2, `DIR given twice (--dir "a" and "b")`},
		{"missing dir", []string{"/does/not/exist"}, 2, `registry: DIR "/does/not/exist" does not exist; give the directory`},
		{"missing --dir", []string{"--dir", "/does/not/exist"}, 2, `registry: --dir "/does/not/exist" does not exist`},
		{"bad health address", []string{"--health-addr", "garbage"}, 2, `registry: --health-addr "garbage": missing port in address`},
		{"bad log level", []string{"--log-level", "loud"}, 2, `registry: --log-level "loud"`},
		{"bad replicas", []string{"--replicas", "9"}, 2, `registry: --replicas "9": want 1 to 5`},
		{"embedded is gone", []string{"--embedded"}, 2, "unknown flag --embedded"},
		{"version", []string{"--version"}, 0, "registry " + version.String() + "\n"},
		{"help", []string{"--help"}, 0, "Usage: registry [flags] [DIR]\n\nLoads skills and sequences"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			servicecmdtest.ExpectExit(t, run, tt.args, tt.code, tt.want)
		})
	}
	t.Run("dir from the environment", func(t *testing.T) {
		t.Setenv("SKILLBUS_DIR", "/does/not/exist")
		servicecmdtest.ExpectExit(t, run, nil, 2, `registry: SKILLBUS_DIR="/does/not/exist" (the environment form of --dir) does not exist`)
	})
}

// TestRunGracefulStop runs the real main logic against a server over
// examples/, then cancels (as SIGTERM does) and expects exit 0 after the
// registry stopped and the connection drained.
func TestRunGracefulStop(t *testing.T) {
	srv := natsserver.StartTB(t, natsserver.Options{})
	args := []string{"--nats", srv.ClientURL(), "--log-json", "../../examples"}
	code, out := servicecmdtest.StartStop(t, func(ctx context.Context, stderr io.Writer) int {
		return run(ctx, args, io.Discard, stderr)
	}, `"msg":"ready"`)
	if code != 0 {
		t.Fatalf("exit code %d; want 0; log:\n%s", code, out)
	}
	for _, want := range []string{`"msg":"registry started"`, `"msg":"registry stopped"`, `"msg":"registry exited"`} {
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
