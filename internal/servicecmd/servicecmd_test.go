package servicecmd_test

import (
	"context"
	"errors"
	"flag"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillbus/skillbus/internal/natsserver"
	"github.com/skillbus/skillbus/internal/servicecmd"
	"github.com/skillbus/skillbus/internal/servicecmd/servicecmdtest"
)

// parse registers the shared flags on a fresh flag set and parses args.
func parse(t *testing.T, args ...string) *servicecmd.Flags {
	t.Helper()
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var f servicecmd.Flags
	f.Register(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatalf("Parse(%q): %v", args, err)
	}
	return &f
}

func TestRegisterDefaults(t *testing.T) {
	t.Setenv("NATS_URL", "")
	t.Setenv("NATS_CREDS", "")
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	var f servicecmd.Flags
	f.Register(fs)
	tests := []struct {
		flag, want string
	}{
		{"nats", nats.DefaultURL},
		{"creds", ""},
		{"embedded", "false"},
		{"embedded-port", "0"},
		{"embedded-store", ""},
		{"replicas", "0"}, // 0 = keep the existing resources' value
		{"memory", "false"},
		{"log-level", "info"},
		{"log-json", "false"},
		{"drain-timeout", "10s"},
	}
	for _, tt := range tests {
		t.Run(tt.flag, func(t *testing.T) {
			fl := fs.Lookup(tt.flag)
			if fl == nil {
				t.Fatalf("Lookup(%q) = nil; want the flag registered", tt.flag)
			}
			if fl.DefValue != tt.want {
				t.Errorf("--%s default = %q; want %q", tt.flag, fl.DefValue, tt.want)
			}
			if fl.Usage == "" {
				t.Errorf("--%s has no help text", tt.flag)
			}
		})
	}
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	if n != len(tests) {
		t.Errorf("Register defined %d flags; want %d", n, len(tests))
	}
}

func TestFlagSetHelp(t *testing.T) {
	var out strings.Builder
	var f servicecmd.Flags
	fs := f.FlagSet("demo", &out, "demo [flags] [DIR]", "Does a demo.\nSecond line.")
	fs.Int("own", 7, "a flag of the service itself")
	if err := fs.Parse([]string{"-h"}); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("Parse(-h) = %v; want flag.ErrHelp", err)
	}
	help := out.String()
	if want := "Usage: demo [flags] [DIR]\n\nDoes a demo.\nSecond line.\n\nFlags:\n"; !strings.HasPrefix(help, want) {
		t.Errorf("help = %q; want it to start with %q", help, want)
	}
	for _, want := range []string{"-drain-timeout duration", "-embedded-store string", "-own int", "(default 7)"} {
		if !strings.Contains(help, want) {
			t.Errorf("help lacks %q:\n%s", want, help)
		}
	}
	out.Reset()
	if err := fs.Parse([]string{"--nope"}); err == nil || !strings.Contains(out.String(), "flag provided but not defined: -nope") {
		t.Errorf("Parse(--nope) = %v, wrote %q; want an error reported on the output", err, out.String())
	}
	if fs.Name() != "demo" || fs.ErrorHandling() != flag.ContinueOnError {
		t.Errorf("FlagSet = %q, %v; want %q, ContinueOnError", fs.Name(), fs.ErrorHandling(), "demo")
	}
}

func TestRegisterReadsEnvironment(t *testing.T) {
	t.Setenv("NATS_URL", "nats://a.example:4222,nats://b.example:4222")
	t.Setenv("NATS_CREDS", "/etc/skillbus/svc.creds")
	f := parse(t)
	if f.NATSURL != "nats://a.example:4222,nats://b.example:4222" {
		t.Errorf("NATSURL = %q; want $NATS_URL", f.NATSURL)
	}
	if f.Creds != "/etc/skillbus/svc.creds" {
		t.Errorf("Creds = %q; want $NATS_CREDS", f.Creds)
	}
	// A flag beats the environment.
	f = parse(t, "--nats", "nats://c.example:4222", "--creds", "")
	if f.NATSURL != "nats://c.example:4222" || f.Creds != "" {
		t.Errorf("with flags: NATSURL = %q, Creds = %q; want the flag values", f.NATSURL, f.Creds)
	}
}

func TestLogger(t *testing.T) {
	tests := []struct {
		name      string
		args      []string
		wantDebug bool // a Debug line is written
		wantInfo  bool // an Info line is written
		wantJSON  bool
	}{
		{"default", nil, false, true, false},
		{"debug", []string{"--log-level", "debug"}, true, true, false},
		{"warn", []string{"--log-level", "warn"}, false, false, false},
		{"error upper case", []string{"--log-level", "ERROR"}, false, false, false},
		{"json", []string{"--log-json"}, false, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out strings.Builder
			log, err := parse(t, tt.args...).Logger(&out)
			if err != nil {
				t.Fatalf("Logger(%q): %v", tt.args, err)
			}
			log.Debug("dbg-line")
			log.Info("info-line")
			log.Error("error-line")
			got := out.String()
			if strings.Contains(got, "dbg-line") != tt.wantDebug {
				t.Errorf("Logger(%q) wrote debug = %v; want %v:\n%s", tt.args, !tt.wantDebug, tt.wantDebug, got)
			}
			if strings.Contains(got, "info-line") != tt.wantInfo {
				t.Errorf("Logger(%q) wrote info = %v; want %v:\n%s", tt.args, !tt.wantInfo, tt.wantInfo, got)
			}
			if !strings.Contains(got, "error-line") {
				t.Errorf("Logger(%q) dropped the error line:\n%s", tt.args, got)
			}
			if isJSON := strings.HasPrefix(got, "{"); isJSON != tt.wantJSON {
				t.Errorf("Logger(%q) JSON = %v; want %v:\n%s", tt.args, isJSON, tt.wantJSON, got)
			}
		})
	}
}

func TestLoggerBadLevel(t *testing.T) {
	for _, level := range []string{"loud", "", "warning"} {
		_, err := parse(t, "--log-level", level).Logger(io.Discard)
		if err == nil {
			t.Errorf("Logger(--log-level %q) = nil error; want one", level)
			continue
		}
		if want := `--log-level "` + level + `": want debug, info, warn or error`; err.Error() != want {
			t.Errorf("Logger(--log-level %q) = %q; want %q", level, err, want)
		}
	}
}

func TestProvision(t *testing.T) {
	tests := []struct {
		name         string
		args         []string
		wantReplicas int
		wantStorage  jetstream.StorageType
	}{
		{"defaults keep the resources", nil, 0, jetstream.FileStorage},
		{"replicas", []string{"--replicas", "3"}, 3, jetstream.FileStorage},
		{"memory", []string{"--memory"}, 0, jetstream.MemoryStorage},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := parse(t, tt.args...).Provision()
			if o.Replicas != tt.wantReplicas || o.Storage != tt.wantStorage {
				t.Errorf("Provision(%q) = replicas %d, storage %v; want %d, %v",
					tt.args, o.Replicas, o.Storage, tt.wantReplicas, tt.wantStorage)
			}
		})
	}
}

// TestRunEmbeddedStartStop runs a service on an embedded server until its
// context ends (as SIGTERM does) and expects exit 0.
func TestRunEmbeddedStartStop(t *testing.T) {
	f := parse(t, "--embedded", "--embedded-store", t.TempDir(), "--log-json")
	code, out := servicecmdtest.StartStop(t, func(ctx context.Context, stderr io.Writer) int {
		log, err := f.Logger(stderr)
		if err != nil {
			t.Errorf("Logger: %v", err)
			return 2
		}
		return f.Run(ctx, "demo", log, func(ctx context.Context, nc *nats.Conn) error {
			// The connection works and carries the service's name.
			if err := nc.Flush(); err != nil {
				return err
			}
			log.Info("demo started", "conn", nc.Opts.Name)
			<-ctx.Done()
			return nil
		})
	}, "demo started")
	if code != 0 {
		t.Fatalf("Run = %d; want 0; log:\n%s", code, out)
	}
	for _, want := range []string{`"msg":"embedded nats-server ready"`, `"conn":"skillbus-demo"`} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %s:\n%s", want, out)
		}
	}
}

// TestRunDrains: messages the service's subscriptions still hold when it
// returns are handled (the drain lets their handlers finish), what those
// handlers publish reaches subscribers, and the connection ends closed.
func TestRunDrains(t *testing.T) {
	const n = 20
	srv := natsserver.StartTB(t, natsserver.Options{})
	sub := natsserver.ConnectTB(t, srv)
	got, err := sub.SubscribeSync("demo.out")
	if err != nil {
		t.Fatal(err)
	}
	if err := sub.Flush(); err != nil {
		t.Fatal(err)
	}
	f := parse(t, "--nats", srv.ClientURL())
	var conn *nats.Conn
	code := f.Run(context.Background(), "demo", slog.New(slog.DiscardHandler), func(_ context.Context, nc *nats.Conn) error {
		conn = nc
		// A slow handler: most requests are still queued when serve returns.
		if _, err := nc.Subscribe("demo.in", func(m *nats.Msg) {
			time.Sleep(5 * time.Millisecond)
			_ = nc.Publish("demo.out", m.Data)
		}); err != nil {
			return err
		}
		for i := range n {
			if err := nc.Publish("demo.in", []byte{byte(i)}); err != nil {
				return err
			}
		}
		return nc.Flush() // the server has sent the requests back by the PONG
	})
	if code != 0 {
		t.Fatalf("Run = %d; want 0", code)
	}
	if !conn.IsClosed() {
		t.Errorf("connection status after Run = %v; want closed", conn.Status())
	}
	for i := range n {
		m, err := got.NextMsg(5 * time.Second)
		if err != nil {
			t.Fatalf("reply %d of %d: %v", i, n, err)
		}
		if m.Data[0] != byte(i) {
			t.Fatalf("reply %d = %d; want %d", i, m.Data[0], i)
		}
	}
}

// TestRunDrainTimeout: a subscription that never finishes its message
// keeps the drain from completing; Run closes the connection after
// --drain-timeout and still exits 0.
func TestRunDrainTimeout(t *testing.T) {
	srv := natsserver.StartTB(t, natsserver.Options{})
	f := parse(t, "--nats", srv.ClientURL(), "--drain-timeout", "200ms")
	var out servicecmdtest.Buffer
	release := make(chan struct{})
	defer close(release)
	start := time.Now()
	code := f.Run(context.Background(), "demo", slog.New(slog.NewTextHandler(&out, nil)), func(_ context.Context, nc *nats.Conn) error {
		entered := make(chan struct{})
		if _, err := nc.Subscribe("demo.stuck", func(*nats.Msg) {
			close(entered)
			<-release
		}); err != nil {
			return err
		}
		if err := nc.Publish("demo.stuck", nil); err != nil {
			return err
		}
		select {
		case <-entered:
			return nil
		case <-time.After(5 * time.Second):
			return errors.New("the handler never ran")
		}
	})
	if code != 0 {
		t.Fatalf("Run = %d; want 0; log:\n%s", code, out.String())
	}
	if !strings.Contains(out.String(), "connection not drained in time; closing") || !strings.Contains(out.String(), "timeout=200ms") {
		t.Errorf("log lacks the drain timeout warning:\n%s", out.String())
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Run took %v with --drain-timeout 200ms", d)
	}
}

func TestRunFailures(t *testing.T) {
	srv := natsserver.StartTB(t, natsserver.Options{})
	tests := []struct {
		name      string
		args      []string
		serveErr  error
		wantServe bool
		want      string
	}{
		{"service fails", []string{"--nats", srv.ClientURL()}, errors.New("bucket gone"), true, `msg="demo failed" err="bucket gone"`},
		{"no server", []string{"--nats", "nats://127.0.0.1:1"}, nil, false, `msg="cannot connect to NATS" url=nats://127.0.0.1:1`},
		{"bad embedded port", []string{"--embedded", "--embedded-port", "-1"}, nil, false, `msg="cannot start the embedded nats-server"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out servicecmdtest.Buffer
			served := false
			code := parse(t, tt.args...).Run(context.Background(), "demo", slog.New(slog.NewTextHandler(&out, nil)),
				func(context.Context, *nats.Conn) error { served = true; return tt.serveErr })
			if code != 1 {
				t.Errorf("Run(%q) = %d; want 1; log:\n%s", tt.args, code, out.String())
			}
			if served != tt.wantServe {
				t.Errorf("Run(%q) called serve = %v; want %v", tt.args, served, tt.wantServe)
			}
			if !strings.Contains(out.String(), tt.want) {
				t.Errorf("Run(%q) logged %q; want it to contain %q", tt.args, out.String(), tt.want)
			}
		})
	}
}

// TestRunBadTraceExport: a mistyped OTEL_TRACES_EXPORTER is a configuration
// error (exit 2) reported before anything connects, never ignored.
func TestRunBadTraceExport(t *testing.T) {
	t.Setenv("OTEL_TRACES_EXPORTER", "jaegr")
	var out servicecmdtest.Buffer
	served := false
	code := parse(t, "--nats", "nats://127.0.0.1:1").Run(context.Background(), "demo", slog.New(slog.NewTextHandler(&out, nil)),
		func(context.Context, *nats.Conn) error { served = true; return nil })
	if code != 2 || served {
		t.Fatalf("Run with OTEL_TRACES_EXPORTER=jaegr = %d (served %v); want 2 without serving; log:\n%s", code, served, out.String())
	}
	if !strings.Contains(out.String(), "OTEL_TRACES_EXPORTER") {
		t.Errorf("log %q; want it to name OTEL_TRACES_EXPORTER", out.String())
	}
}
