package natsconn_test

import (
	"context"
	"errors"
	"flag"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/skillbus/skillbus/internal/natsconn"
)

// clearEnv unsets every variable natsconn reads, and points the nats CLI's
// context directory at an empty temporary directory; it returns that
// directory (contexts go in DIR/nats/context).
func clearEnv(t *testing.T) string {
	t.Helper()
	for _, v := range []string{natsconn.EnvURL, natsconn.EnvCreds, natsconn.EnvNKey, natsconn.EnvCert, natsconn.EnvKey, natsconn.EnvCA, natsconn.EnvContext} {
		t.Setenv(v, "")
	}
	dir := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", dir)
	return dir
}

// parse registers the connection flags on a fresh flag set and parses args.
func parse(t *testing.T, args ...string) natsconn.Settings {
	t.Helper()
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var s natsconn.Settings
	s.Register(fs, true)
	if err := fs.Parse(args); err != nil {
		t.Fatalf("Parse(%q): %v", args, err)
	}
	return s
}

// writeContext writes a nats CLI context file NAME.json under cfgDir.
func writeContext(t *testing.T, cfgDir, name, body string) string {
	t.Helper()
	dir := filepath.Join(cfgDir, "nats", "context")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return writeFile(t, dir, name+".json", []byte(body))
}

func quote(s string) string { return strconv.Quote(s) }

func TestResolveLayers(t *testing.T) {
	cfg := clearEnv(t)
	files := t.TempDir()
	credsA := writeFile(t, files, "a.creds", []byte("x"))
	credsB := writeFile(t, files, "b.creds", []byte("x"))
	seed := writeFile(t, files, "u.nk", []byte("x"))
	ca := writeFile(t, files, "ca.pem", []byte("x"))
	writeContext(t, cfg, "prod", `{"description":"prod","url":"nats://ctx:4222","creds":`+quote(credsA)+`,"ca":`+quote(ca)+`,"color_scheme":"dark"}`)
	writeContext(t, cfg, "userpw", `{"url":"nats://pw:4222","user":"alice","password":"env://TEST_NATS_PW","token":"tok"}`)
	t.Setenv("TEST_NATS_PW", "s3cret")

	// Nothing set: the default URL, no credentials.
	c, err := parse(t).Resolve()
	if err != nil || c.URL != nats.DefaultURL || c.URLSource != "default" || c.Creds.V != "" {
		t.Fatalf("Resolve() = %+v, %v; want the default URL alone", c, err)
	}

	// The context supplies what nothing else sets.
	c, err = parse(t, "--context", "prod").Resolve()
	if err != nil {
		t.Fatal(err)
	}
	if c.URL != "nats://ctx:4222" || c.URLSource != "context prod" || c.Creds.V != credsA || c.Creds.Source != "context prod" || c.TLSCA.V != ca {
		t.Errorf("--context prod: %+v; want the context's url, creds and ca", c)
	}

	// The environment beats the context; a flag beats the environment.
	t.Setenv("NATS_URL", "nats://env:4222")
	t.Setenv("NATS_CREDS", credsB)
	c, err = parse(t, "--context", "prod").Resolve()
	if err != nil {
		t.Fatal(err)
	}
	if c.URL != "nats://env:4222" || c.URLSource != "NATS_URL" || c.Creds.V != credsB || c.Creds.Source != "NATS_CREDS" {
		t.Errorf("env over context: %+v", c)
	}
	c, err = parse(t, "--context", "prod", "--nats", "nats://flag:4222", "--creds", credsA).Resolve()
	if err != nil {
		t.Fatal(err)
	}
	if c.URL != "nats://flag:4222" || c.URLSource != "--nats" || c.Creds.Source != "--creds" {
		t.Errorf("flag over env: %+v", c)
	}

	// Authentication is taken whole: an explicit nkey drops the context's creds.
	t.Setenv("NATS_CREDS", "")
	c, err = parse(t, "--context", "prod", "--nkey", seed).Resolve()
	if err != nil {
		t.Fatal(err)
	}
	if c.Creds.V != "" || c.NKey.V != seed {
		t.Errorf("--nkey with a creds context: creds %q, nkey %q; want only the nkey", c.Creds.V, c.NKey.V)
	}

	// user, password (env:// reference) and token from a context.
	c, err = parse(t, "--context", "userpw").Resolve()
	if err != nil {
		t.Fatal(err)
	}
	if c.User != "alice" || c.Password != "s3cret" || c.Token != "tok" {
		t.Errorf("userpw context: user %q password %q token %q", c.User, c.Password, c.Token)
	}
	if d := c.Describe(); strings.Contains(d, "s3cret") || !strings.Contains(d, "user alice") {
		t.Errorf("Describe() = %q; want the user without the password", d)
	}

	// A context given as a file path.
	p := writeFile(t, files, "any.json", []byte(`{"url":"nats://file:4222"}`))
	t.Setenv("NATS_URL", "")
	t.Setenv("NATS_CONTEXT", p)
	c, err = parse(t).Resolve()
	if err != nil || c.URL != "nats://file:4222" {
		t.Errorf("NATS_CONTEXT=%s: %+v, %v; want its url", p, c, err)
	}
}

func TestResolveErrors(t *testing.T) {
	cfg := clearEnv(t)
	files := t.TempDir()
	creds := writeFile(t, files, "a.creds", []byte("x"))
	seed := writeFile(t, files, "u.nk", []byte("x"))
	writeContext(t, cfg, "prod", `{"url":"nats://ctx:4222"}`)
	writeContext(t, cfg, "socks", `{"url":"nats://ctx:4222","socks_proxy":"127.0.0.1:1080"}`)
	writeContext(t, cfg, "op", `{"url":"nats://ctx:4222","user":"a","password":"op://vault/item/pw"}`)
	writeContext(t, cfg, "broken", `{"url": 4222}`)
	writeContext(t, cfg, "inbox", `{"url":"nats://ctx:4222","inbox_prefix":"my.replies"}`)
	tests := []struct {
		name string
		env  map[string]string
		args []string
		want []string // all in the message
	}{
		{"missing creds file from env", map[string]string{"NATS_CREDS": "/nope/x.creds"}, nil, []string{"credentials file /nope/x.creds (NATS_CREDS): no such file"}},
		{"missing creds file from flag", nil, []string{"--creds", "/nope/y.creds"}, []string{"(--creds): no such file"}},
		{"directory as CA", nil, []string{"--tls-ca", files}, []string{"TLS CA file", "(--tls-ca): not a regular file"}},
		{"cert without key", nil, []string{"--tls-cert", creds}, []string{"needs its key", "--tls-cert is set"}},
		{"key without cert", map[string]string{"NATS_KEY": creds}, nil, []string{"NATS_KEY is set but the certificate"}},
		{"creds and nkey", nil, []string{"--creds", creds, "--nkey", seed}, []string{"both a credentials file (--creds) and an nkey seed (--nkey)"}},
		{"unknown context", nil, []string{"--context", "stage"}, []string{`no nats context "stage"`, "known contexts:", "prod", "(--context)"}},
		{"unsupported field", map[string]string{"NATS_CONTEXT": "socks"}, nil, []string{"sets socks_proxy", "(NATS_CONTEXT)"}},
		{"op reference", nil, []string{"--context", "op"}, []string{"password: op:// references are not supported"}},
		{"invalid json", nil, []string{"--context", "broken"}, []string{`nats context "broken"`, "not a valid context file"}},
		{"inbox prefix not under _INBOX.", nil, []string{"--context", "inbox"}, []string{`inbox_prefix "my.replies"`, "under _INBOX."}},
		{"bad url", nil, []string{"--nats", "nats://a:4222,nats://%zz"}, []string{"--nats", "is not a URL"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			_, err := parse(t, tt.args...).Resolve()
			if !errors.Is(err, natsconn.ErrConfig) {
				t.Fatalf("Resolve() = %v; want ErrConfig", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Resolve() = %q; want it to contain %q", err, w)
				}
			}
		})
	}
}

func TestRedact(t *testing.T) {
	got := natsconn.Redact("nats://u:pw@a:4222, nats://tok@b:4222,nats://c:4222")
	want := "nats://u:xxxxx@a:4222,nats://xxxxx@b:4222,nats://c:4222"
	if got != want {
		t.Errorf("Redact = %q; want %q", got, want)
	}
}

// connectOK connects with args (and the environment) and checks that a
// round trip works.
func connectOK(t *testing.T, args ...string) {
	t.Helper()
	nc, _, err := natsconn.Connect(parse(t, args...), "test")
	if err != nil {
		t.Fatalf("Connect(%q): %v", args, err)
	}
	defer nc.Close()
	if err := nc.Flush(); err != nil {
		t.Fatalf("Flush: %v", err)
	}
}

// connectFails connects with args and expects an error containing want.
func connectFails(t *testing.T, want string, args ...string) {
	t.Helper()
	nc, _, err := natsconn.Connect(parse(t, args...), "test")
	if err == nil {
		nc.Close()
		t.Fatalf("Connect(%q) succeeded; want an error", args)
	}
	if !strings.Contains(strings.ToLower(err.Error()), strings.ToLower(want)) {
		t.Errorf("Connect(%q) = %v; want it to mention %q", args, err, want)
	}
}

func TestConnectMutualTLS(t *testing.T) {
	clearEnv(t)
	p := newPKI(t)
	s := startServer(t, 0, tlsServer(t, p))
	url := s.ClientURL()
	connectOK(t, "--nats", url, "--tls-cert", p.ClientCert, "--tls-key", p.ClientKey, "--tls-ca", p.CA)
	// The same through the nats CLI's variables.
	t.Setenv("NATS_URL", url)
	t.Setenv("NATS_CERT", p.ClientCert)
	t.Setenv("NATS_KEY", p.ClientKey)
	t.Setenv("NATS_CA", p.CA)
	connectOK(t)
	// Without a client certificate the server refuses the handshake; with
	// the wrong CA the client refuses the server.
	t.Setenv("NATS_CERT", "")
	t.Setenv("NATS_KEY", "")
	connectFails(t, "cannot connect to NATS")
	connectFails(t, "certificate", "--tls-cert", p.ClientCert, "--tls-key", p.ClientKey, "--tls-ca", p.OtherCA)
}

func TestConnectNKey(t *testing.T) {
	clearEnv(t)
	seed, tune := nkeyUser(t)
	s := startServer(t, 0, tune)
	connectOK(t, "--nats", s.ClientURL(), "--nkey", seed)
	t.Setenv("NATS_NKEY", seed)
	connectOK(t, "--nats", s.ClientURL())
	t.Setenv("NATS_NKEY", "")
	connectFails(t, "authorization violation", "--nats", s.ClientURL())
	// A file that is no seed is a configuration error, named.
	bad := writeFile(t, t.TempDir(), "bad.nk", []byte("not a seed"))
	_, _, err := natsconn.Connect(parse(t, "--nats", s.ClientURL(), "--nkey", bad), "test")
	if !errors.Is(err, natsconn.ErrConfig) || !strings.Contains(err.Error(), "bad.nk (--nkey)") {
		t.Errorf("Connect with a bad seed file = %v; want ErrConfig naming it", err)
	}
}

func TestConnectCredsAndContext(t *testing.T) {
	cfg := clearEnv(t)
	creds, tune := operatorSetup(t)
	s := startServer(t, 0, tune)
	connectOK(t, "--nats", s.ClientURL(), "--creds", creds)
	connectFails(t, "authorization violation", "--nats", s.ClientURL())
	// A nats CLI context holding the URL and the creds (with ~ unexpanded
	// paths work too: the test writes an absolute one).
	writeContext(t, cfg, "ops", `{"url":`+quote(s.ClientURL())+`,"creds":`+quote("file://"+creds)+`}`)
	connectOK(t, "--context", "ops")
	t.Setenv("NATS_CONTEXT", "ops")
	connectOK(t)
}

func TestConnectUserPasswordInURL(t *testing.T) {
	clearEnv(t)
	s := startServer(t, 0, func(o *server.Options) { o.Username, o.Password = "svc", "pw" })
	u := strings.Replace(s.ClientURL(), "nats://", "nats://svc:pw@", 1)
	connectOK(t, "--nats", u)
	connectFails(t, "authorization violation", "--nats", s.ClientURL())
	_, _, err := natsconn.Connect(parse(t, "--nats", strings.Replace(u, ":pw@", ":wrong@", 1)), "test")
	if err == nil || strings.Contains(err.Error(), "wrong") {
		t.Errorf("Connect with a wrong password = %v; want an error that does not show the password", err)
	}
}

func TestReconnectDelay(t *testing.T) {
	prev := time.Duration(0)
	for n := 1; n <= 12; n++ {
		base := min(natsconn.ReconnectInitial<<(n-1), natsconn.ReconnectMax)
		for range 50 {
			d := natsconn.ReconnectDelay(n)
			if d < base-base/5 || d > base+base/5 {
				t.Fatalf("ReconnectDelay(%d) = %v; want %v ±20%%", n, d, base)
			}
		}
		if base < prev {
			t.Fatalf("back-off shrinks at attempt %d", n)
		}
		prev = base
	}
}

// syncBuf is a log buffer shared by the connection's callbacks and the test.
type syncBuf struct {
	mu      sync.Mutex // mu guards b and written
	b       strings.Builder
	written chan struct{} // closed by the next Write; nil until waitLog asks
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.written != nil {
		close(s.written)
		s.written = nil
	}
	return s.b.Write(p)
}

// changed returns the text so far and a channel closed by the next Write.
func (s *syncBuf) changed() (string, <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.written == nil {
		s.written = make(chan struct{})
	}
	return s.b.String(), s.written
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// waitLog waits until the log holds want, woken by each line written.
func waitLog(t *testing.T, log *syncBuf, want string) {
	t.Helper()
	timeout := time.NewTimer(time.Minute) // generous: a loaded machine
	defer timeout.Stop()
	for text, next := log.changed(); !strings.Contains(text, want); text, next = log.changed() {
		select {
		case <-next:
		case <-timeout.C:
			t.Fatalf("no %q in the log:\n%s", want, log.String())
		}
	}
}

// TestDialWaitsThenReconnects: a service dialling before NATS is up waits
// (and says so), connects when the server appears, survives a restart of
// the server, and drains without being reported lost.
func TestDialWaitsThenReconnects(t *testing.T) {
	clearEnv(t)
	port := freePort(t)
	var log syncBuf
	c, err := parse(t, "--nats", "nats://127.0.0.1:"+strconv.Itoa(port)).Resolve()
	if err != nil {
		t.Fatal(err)
	}
	conn, err := natsconn.Dial(c, "test-svc", slog.New(slog.NewTextHandler(&log, nil)))
	if err != nil {
		t.Fatalf("Dial with no server: %v; want the connection to keep trying", err)
	}
	defer conn.Close()
	if conn.Opts.MaxReconnect != -1 || !conn.Opts.RetryOnFailedConnect {
		t.Errorf("MaxReconnects = %d, RetryOnFailedConnect = %v; want -1 (for ever; nats.go's default 60 left tools serve dead after a 140 s outage) and true",
			conn.Opts.MaxReconnect, conn.Opts.RetryOnFailedConnect)
	}
	waitLog(t, &log, `msg="waiting for NATS"`)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	if err := conn.WaitConnected(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("WaitConnected with no server = %v; want the deadline", err)
	}
	cancel()

	s := startServer(t, port, nil)
	ctx, cancel = context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := conn.WaitConnected(ctx); err != nil {
		t.Fatalf("WaitConnected after the server started: %v\n%s", err, log.String())
	}
	waitLog(t, &log, `msg="NATS connected"`)

	// A restart of the server: the connection comes back by itself.
	s.Shutdown()
	s.WaitForShutdown()
	waitLog(t, &log, `msg="NATS disconnected; reconnecting"`)
	time.Sleep(700 * time.Millisecond) // the behaviour: an outage long enough for several reconnect attempts to fail
	startServer(t, port, nil)
	waitLog(t, &log, `msg="NATS reconnected"`)
	if err := conn.WaitConnected(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-conn.Lost():
		t.Fatal("connection reported lost after a restart it survived")
	default:
	}
	if err := conn.Drain(ctx); err != nil {
		t.Fatalf("Drain: %v", err)
	}
	select {
	case <-conn.Lost():
		t.Fatal("Drain reported as a lost connection")
	default:
	}
	if conn.LostErr() != nil {
		t.Errorf("LostErr after Drain = %v; want nil", conn.LostErr())
	}
}

// TestDialClosedForGood: when the server comes back refusing the
// service's credentials, nats.go gives up; Lost must say so (the service
// then exits non-zero), not leave a silent connection.
func TestDialClosedForGood(t *testing.T) {
	clearEnv(t)
	port := freePort(t)
	s := startServer(t, port, func(o *server.Options) { o.Username, o.Password = "svc", "pw" })
	var log syncBuf
	c, err := parse(t, "--nats", "nats://svc:pw@127.0.0.1:"+strconv.Itoa(port)).Resolve()
	if err != nil {
		t.Fatal(err)
	}
	conn, err := natsconn.Dial(c, "test-svc", slog.New(slog.NewTextHandler(&log, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := conn.WaitConnected(ctx); err != nil {
		t.Fatal(err)
	}
	s.Shutdown()
	s.WaitForShutdown()
	startServer(t, port, func(o *server.Options) { o.Username, o.Password = "svc", "rotated" })
	select {
	case <-conn.Lost():
	case <-ctx.Done():
		t.Fatalf("connection not reported lost with its password refused\n%s", log.String())
	}
	if err := conn.LostErr(); err == nil || !strings.Contains(strings.ToLower(err.Error()), "authorization violation") {
		t.Errorf("LostErr = %v; want the authorization error", err)
	}
	if !strings.Contains(log.String(), `msg="NATS connection closed for good"`) {
		t.Errorf("log lacks the closed line:\n%s", log.String())
	}
	if err := conn.WaitConnected(ctx); !errors.Is(err, nats.ErrConnectionClosed) {
		t.Errorf("WaitConnected on a closed connection = %v; want ErrConnectionClosed", err)
	}
}
