//go:build linux

package chaos

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// proc is one process of the suite (a NATS node, a seqworker, the tool
// provider) that can be started, SIGKILLed and started again. Its output
// goes to a log file, kept across restarts.
type proc struct {
	t    *testing.T
	name string
	argv []string
	env  []string
	ns   string // the network namespace to run in ("" = this one)
	log  string // the log file

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
	starts int
}

// start starts the process (again).
func (p *proc) start() {
	p.t.Helper()
	argv := p.argv
	if p.ns != "" {
		// ip netns exec execs the command: the pid is the process's own.
		argv = append([]string{"ip", "netns", "exec", p.ns}, argv...)
	}
	f, err := os.OpenFile(p.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		p.t.Fatal(err)
	}
	p.mu.Lock()
	p.starts++
	fmt.Fprintf(f, "\n==== [chaos] %s start %d at %s: %s\n", p.name, p.starts, time.Now().Format(time.RFC3339Nano), strings.Join(argv, " "))
	p.mu.Unlock()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(environ(), p.env...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		f.Close()
		p.t.Fatalf("start %s: %v", p.name, err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		f.Close()
		close(exited)
	}()
	p.mu.Lock()
	p.cmd, p.exited = cmd, exited
	p.mu.Unlock()
}

// kill sends SIGKILL and waits until the process is gone.
func (p *proc) kill() {
	p.mu.Lock()
	cmd, exited := p.cmd, p.exited
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Kill()
	<-exited
	p.note("SIGKILL")
}

// note writes a line of the suite into the process's log.
func (p *proc) note(what string) {
	f, err := os.OpenFile(p.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return
	}
	defer f.Close()
	fmt.Fprintf(f, "==== [chaos] %s %s at %s\n", p.name, what, time.Now().Format(time.RFC3339Nano))
}

// stop kills the process for good (at the end of the suite).
func (p *proc) stop() { p.kill() }

// running reports whether the process runs.
func (p *proc) running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.exited == nil {
		return false
	}
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// tail returns the last n bytes of the process's log.
func (p *proc) tail(n int) string {
	b, _ := os.ReadFile(p.log)
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

// freePort returns a TCP port free on 127.0.0.1 right now.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// httpOK reports whether GET url answers 200 within a second.
func httpOK(url string) bool {
	c := http.Client{Timeout: time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// waitHTTP waits until GET url answers 200, up to limit; false if it
// never did.
func waitHTTP(url string, limit time.Duration) bool {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		if httpOK(url) {
			return true
		}
		time.Sleep(100 * time.Millisecond)
	}
	return false
}

// binDir is where build puts the binaries, made by the first build of
// this test process (SKILLBUS_CHAOS_DIR/bin when set, kept; else a
// temporary directory TestMain removes), so TestChaos, TestChaosLostReply
// and TestChaosForEach build once: go build does not link again a binary
// that is up to date.
var binDir struct {
	mu   sync.Mutex // mu guards path and temp
	path string
	temp bool
}

// TestMain removes the binaries' temporary directory after the tests.
func TestMain(m *testing.M) {
	code := m.Run()
	binDir.mu.Lock()
	if binDir.temp {
		_ = os.RemoveAll(binDir.path)
	}
	binDir.mu.Unlock()
	os.Exit(code)
}

// build builds the binaries the suite runs: nats-server (the version
// go.mod requires, from the module cache) and cmd/seqworker, into binDir.
func build(t *testing.T, root string) (natsServer, seqworker string) {
	t.Helper()
	binDir.mu.Lock()
	defer binDir.mu.Unlock()
	if binDir.path == "" {
		if d := os.Getenv("SKILLBUS_CHAOS_DIR"); d != "" {
			binDir.path = filepath.Join(d, "bin")
		} else {
			d, err := os.MkdirTemp("", "skillbus-chaos-bin-")
			if err != nil {
				t.Fatal(err)
			}
			binDir.path, binDir.temp = d, true
		}
	}
	dir := binDir.path
	t0 := time.Now()
	for _, pkg := range []string{"github.com/nats-io/nats-server/v2", "./cmd/seqworker"} {
		cmd := exec.Command("go", "build", "-o", dir+string(os.PathSeparator), pkg)
		cmd.Dir = root
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			t.Fatalf("go build %s: %v\n%s", pkg, err, out.String())
		}
	}
	t.Logf("built nats-server and seqworker in %v (into %s)", time.Since(t0).Round(time.Millisecond), dir)
	return filepath.Join(dir, "nats-server"), filepath.Join(dir, "seqworker")
}

// environ is this process's environment without the suite's own
// variables (the services warn about SKILLBUS_* variables that name none
// of their flags).
func environ() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SKILLBUS_CHAOS") {
			env = append(env, kv)
		}
	}
	return env
}
