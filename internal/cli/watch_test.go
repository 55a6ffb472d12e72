package cli

import (
	"bytes"
	"context"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillbus/skillbus/internal/natsserver"
	"github.com/skillbus/skillbus/pkg/events"
)

// lockedBuf is a bytes.Buffer safe for a writer and a reader in different
// goroutines.
type lockedBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// watchServer starts a provisioned server on a TempDir store; restart
// starts a new one on the same port and store after the old one is shut
// down.
func watchServer(t *testing.T) (srv func() *natsserver.Server, restart func()) {
	t.Helper()
	dir := t.TempDir()
	s := natsserver.StartTB(t, natsserver.Options{StoreDir: dir})
	u, err := url.Parse(s.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	port, _ := strconv.Atoi(u.Port())
	nc := natsserver.ConnectTB(t, s)
	js, _ := jetstream.New(nc)
	if err := events.Provision(context.Background(), js, events.Options{}); err != nil {
		t.Fatal(err)
	}
	nc.Close()
	t.Setenv(EnvNATSURL, s.ClientURL())
	cur := s
	return func() *natsserver.Server { return cur }, func() {
		cur = natsserver.StartTB(t, natsserver.Options{StoreDir: dir, Port: port})
	}
}

func testPublishAgentReady(t *testing.T, s *natsserver.Server, agent string) {
	t.Helper()
	nc := natsserver.ConnectTB(t, s)
	defer nc.Close()
	js, _ := jetstream.New(nc)
	subj, err := events.AgentReadySubject(agent)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := js.Publish(ctx, subj, []byte(`{"agent":"`+agent+`","boot_id":"b-`+agent+`"}`)); err != nil {
		t.Fatalf("publish %s: %v", subj, err)
	}
}

func waitFor(t *testing.T, what string, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// startWatch runs `skillbus watch args...` in the background; the returned
// channel yields its exit code.
func startWatch(t *testing.T, ctx context.Context, args ...string) (stdout, stderr *lockedBuf, done <-chan int) {
	stdout, stderr = &lockedBuf{}, &lockedBuf{}
	ch := make(chan int, 1)
	go func() { ch <- runWatch(ctx, Env{Stdin: strings.NewReader(""), Stdout: stdout, Stderr: stderr}, args) }()
	return stdout, stderr, ch
}

// TestWatchSurvivesServerRestart stops the server under a running watch,
// restarts it on the same port and store, and checks that watch says it
// lost the connection, resumes printing new events (without repeating old
// ones), and that Ctrl-C while disconnected ends it at once with exit 0.
func TestWatchSurvivesServerRestart(t *testing.T) {
	srv, restart := watchServer(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stdout, stderr, done := startWatch(t, ctx)
	waitFor(t, "watch to start", 10*time.Second, func() bool { return strings.Contains(stderr.String(), "watching events") })
	testPublishAgentReady(t, srv(), "before")
	waitFor(t, "the first event", 10*time.Second, func() bool { return strings.Contains(stdout.String(), "agent_ready before") })

	srv().Shutdown()
	waitFor(t, "watch to report the lost connection", 10*time.Second, func() bool {
		return strings.Contains(stderr.String(), "NATS connection lost; reconnecting")
	})
	restart()
	waitFor(t, "watch to reconnect", 15*time.Second, func() bool { return strings.Contains(stderr.String(), "reconnected") })
	testPublishAgentReady(t, srv(), "after")
	waitFor(t, "an event after the restart", 15*time.Second, func() bool { return strings.Contains(stdout.String(), "agent_ready after") })
	if n := strings.Count(stdout.String(), "agent_ready before"); n != 1 {
		t.Errorf("the event before the restart was printed %d times; want 1:\n%s", n, stdout)
	}

	srv().Shutdown()
	waitFor(t, "watch to report the second loss", 10*time.Second, func() bool {
		return strings.Count(stderr.String(), "NATS connection lost") == 2
	})
	start := time.Now()
	cancel()
	select {
	case code := <-done:
		if code != ExitOK {
			t.Errorf("watch after Ctrl-C = %d; want %d\nstderr:\n%s", code, ExitOK, stderr)
		}
		if d := time.Since(start); d > 3*time.Second {
			t.Errorf("watch took %v to stop after Ctrl-C while disconnected; want under 3 s", d)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("watch ignored Ctrl-C while disconnected for 10 s\nstderr:\n%s", stderr)
	}
}

// TestWatchRunSurvivesServerRestart follows one run across a restart: the
// run's finished event, published after the restart, ends watch RUN_ID.
func TestWatchRunSurvivesServerRestart(t *testing.T) {
	srv, restart := watchServer(t)
	publishRun := func(kind, status string) {
		t.Helper()
		nc := natsserver.ConnectTB(t, srv())
		defer nc.Close()
		js, _ := jetstream.New(nc)
		subj, err := events.RunEventSubject("r1", kind)
		if err != nil {
			t.Fatal(err)
		}
		body := `{"kind":"` + kind + `","run_id":"r1","sequence":"s","status":"` + status + `"}`
		if _, err := js.Publish(context.Background(), subj, []byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	publishRun(events.RunStarted, "running")
	stdout, stderr, done := startWatch(t, context.Background(), "r1")
	waitFor(t, "the started event", 10*time.Second, func() bool { return strings.Contains(stdout.String(), "run r1: s started") })
	srv().Shutdown()
	waitFor(t, "the lost connection", 10*time.Second, func() bool { return strings.Contains(stderr.String(), "NATS connection lost") })
	restart()
	waitFor(t, "watch to reconnect", 15*time.Second, func() bool { return strings.Contains(stderr.String(), "reconnected") })
	publishRun(events.RunFinished, events.StatusSucceeded)
	select {
	case code := <-done:
		if code != ExitOK || !strings.Contains(stdout.String(), "s succeeded") {
			t.Errorf("watch r1 = %d, stdout:\n%s\nwant 0 and the run succeeded", code, stdout)
		}
		if n := strings.Count(stdout.String(), "started"); n != 1 {
			t.Errorf("started printed %d times; want 1:\n%s", n, stdout)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("watch r1 did not end after the run finished across a restart\nstdout:\n%s\nstderr:\n%s", stdout, stderr)
	}
}

// TestWatchUnreachable: with no server back within watchUnreachableAfter,
// watch exits 1 saying NATS is unreachable.
func TestWatchUnreachable(t *testing.T) {
	old := watchUnreachableAfter
	watchUnreachableAfter = time.Second
	defer func() { watchUnreachableAfter = old }()
	srv, _ := watchServer(t)
	_, stderr, done := startWatch(t, context.Background())
	waitFor(t, "watch to start", 10*time.Second, func() bool { return strings.Contains(stderr.String(), "watching events") })
	srv().Shutdown()
	select {
	case code := <-done:
		if code != ExitFailure || !strings.Contains(stderr.String(), "NATS unreachable") {
			t.Errorf("watch without a server = %d, stderr:\n%s\nwant %d and \"NATS unreachable\"", code, stderr, ExitFailure)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("watch kept waiting for a server for 10 s with a 1 s limit\nstderr:\n%s", stderr)
	}
}
