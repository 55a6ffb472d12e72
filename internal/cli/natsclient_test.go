package cli

import (
	"context"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/skillbus/skillbus/internal/version"
)

// runMain runs the command line and returns its exit code, stdout and
// stderr.
func runMain(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb strings.Builder
	code := Main(context.Background(), args, strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

// clearNATSEnv unsets the NATS_* variables and points the nats CLI's
// context directory at an empty temporary one, returned.
func clearNATSEnv(t *testing.T) string {
	t.Helper()
	for _, v := range []string{"NATS_URL", "NATS_CREDS", "NATS_NKEY", "NATS_CERT", "NATS_KEY", "NATS_CA", "NATS_CONTEXT"} {
		t.Setenv(v, "")
	}
	dir := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", dir)
	return dir
}

func TestVersion(t *testing.T) {
	for _, arg := range []string{"--version", "version"} {
		code, out, _ := runMain(t, arg)
		if code != ExitOK || out != "skillbus "+version.String()+"\n" {
			t.Errorf("skillbus %s = %d %q; want 0 %q", arg, code, out, "skillbus "+version.String())
		}
	}
}

// TestConnectionFlags: every command that talks to NATS takes the nats
// CLI's connection settings; a command that does not, does not.
func TestConnectionFlags(t *testing.T) {
	cfg := clearNATSEnv(t)
	// A server that wants a password.
	s, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: server.RANDOM_PORT, NoSigs: true, NoLog: true, Username: "ops", Password: "pw"})
	if err != nil {
		t.Fatal(err)
	}
	s.Start()
	defer s.Shutdown()
	if !s.ReadyForConnections(10e9) {
		t.Fatal("server not ready")
	}
	dir := filepath.Join(cfg, "nats", "context")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	u := s.ClientURL()
	ctxJSON := `{"url":"` + u + `","user":"ops","password":"pw"}`
	if err := os.WriteFile(filepath.Join(dir, "ops.json"), []byte(ctxJSON), 0o600); err != nil {
		t.Fatal(err)
	}

	// tools lists the tool providers: none here, but it must get in.
	if code, _, errb := runMain(t, "tools", "--context", "ops"); code != ExitOK {
		t.Errorf("tools --context ops = %d; want 0; stderr:\n%s", code, errb)
	}
	t.Setenv("NATS_CONTEXT", "ops")
	if code, _, errb := runMain(t, "tools"); code != ExitOK {
		t.Errorf("tools with NATS_CONTEXT=ops = %d; want 0; stderr:\n%s", code, errb)
	}
	t.Setenv("NATS_CONTEXT", "")
	// Without the credentials the server refuses.
	t.Setenv("NATS_URL", u)
	if code, _, errb := runMain(t, "tools"); code != ExitFailure || !strings.Contains(strings.ToLower(errb), "authorization violation") {
		t.Errorf("tools without credentials = %d %q; want 1 and the server's refusal", code, errb)
	}
	// A settings problem is a usage error naming the flag.
	code, _, errb := runMain(t, "seqs", "--creds", "/nope.creds")
	if code != ExitUsage || !strings.Contains(errb, "credentials file /nope.creds (--creds): no such file") {
		t.Errorf("seqs --creds /nope.creds = %d %q; want 2 naming the flag", code, errb)
	}
	code, _, errb = runMain(t, "tools", "serve", "--root", ".", "--context", "nope")
	if code != ExitUsage || !strings.Contains(errb, `no nats context`) || !strings.Contains(errb, "known contexts: ops") {
		t.Errorf("tools serve --context nope = %d %q; want 2 listing the known contexts", code, errb)
	}
	// Offline commands do not take them.
	if code, _, errb := runMain(t, "validate", "--creds", "x", "."); code != ExitUsage || !strings.Contains(errb, "unknown flag --creds") {
		t.Errorf("validate --creds = %d %q; want 2, no such flag", code, errb)
	}
	// The help of a connecting command shows them.
	if _, out, _ := runMain(t, "help", "watch"); !strings.Contains(out, "--context NAME") || !strings.Contains(out, "--tls-ca FILE") {
		t.Errorf("help watch lacks the connection flags:\n%s", out)
	}
	if _, out, _ := runMain(t, "help", "validate"); strings.Contains(out, "--creds") {
		t.Errorf("help validate shows the connection flags:\n%s", out)
	}
}

func TestDevRefusesNonLoopback(t *testing.T) {
	for _, host := range []string{"0.0.0.0", "::", "192.0.2.1", "example.com", ""} {
		code, _, errb := runMain(t, "dev", "--host", host, "--port", "0", "--data", t.TempDir())
		if code != ExitUsage || !strings.Contains(errb, "is not a loopback address") {
			t.Errorf("dev --host %q = %d %q; want 2, refused", host, code, errb)
		}
	}
	for _, host := range []string{"127.0.0.1", "::1", "[::1]", "localhost", "127.0.0.2"} {
		if err := loopbackOnly(host); err != nil {
			t.Errorf("loopbackOnly(%q) = %v; want accepted", host, err)
		}
	}
}

// TestToolsServeAsService: `tools serve` runs like a service — it waits for
// NATS, answers /readyz once serving, takes SKILLBUS_* variables, and stops
// at the context's end with exit 0.
func TestToolsServeAsService(t *testing.T) {
	clearNATSEnv(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	health, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	haddr := health.Addr().String()
	health.Close()
	t.Setenv("NATS_URL", "nats://127.0.0.1:"+strconv.Itoa(port))
	t.Setenv("SKILLBUS_HEALTH_ADDR", haddr)
	t.Setenv("SKILLBUS_SHUTDOWN_BUDGET", "3s")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errb syncBuf
	done := make(chan int, 1)
	go func() {
		done <- Main(ctx, []string{"tools", "serve", "--root", t.TempDir()}, strings.NewReader(""), &out, &errb)
	}()
	get := func(path string) int {
		resp, err := http.Get("http://" + haddr + path)
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	waitUntil(t, func() bool { return get("/livez") == 200 }, "/livez", &errb)
	waitUntil(t, func() bool { return strings.Contains(errb.String(), "waiting for NATS") }, "waiting for NATS", &errb)
	if code := get("/readyz"); code != 503 {
		t.Errorf("/readyz without NATS = %d; want 503", code)
	}
	srv, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: port, NoSigs: true, NoLog: true})
	if err != nil {
		t.Fatal(err)
	}
	srv.Start()
	defer srv.Shutdown()
	waitUntil(t, func() bool { return get("/readyz") == 200 }, "/readyz 200", &errb)
	if !strings.Contains(out.String(), "serving fs.list") {
		t.Errorf("stdout = %q; want the serving line", out.String())
	}
	cancel()
	select {
	case code := <-done:
		if code != ExitOK {
			t.Errorf("tools serve = %d after stop; want 0\n%s", code, errb.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("tools serve did not stop\n%s", errb.String())
	}
	t.Setenv("SKILLBUS_MAX_READ", "big")
	if code, _, e := runMain(t, "tools", "serve", "--root", "."); code != ExitUsage || !strings.Contains(e, `SKILLBUS_MAX_READ="big": not a whole number`) {
		t.Errorf("tools serve with SKILLBUS_MAX_READ=big = %d %q; want 2 naming the variable", code, e)
	}
}

type syncBuf struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func waitUntil(t *testing.T, ok func() bool, what string, log *syncBuf) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); !ok(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s\n%s", what, log.String())
		}
	}
}
