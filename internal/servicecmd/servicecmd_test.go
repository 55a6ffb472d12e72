package servicecmd_test

import (
	"context"
	"errors"
	"flag"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillbus/skillbus/internal/natsconn"
	"github.com/skillbus/skillbus/internal/natsserver"
	"github.com/skillbus/skillbus/internal/servicecmd"
	"github.com/skillbus/skillbus/internal/servicecmd/servicecmdtest"
	"github.com/skillbus/skillbus/internal/version"
	"github.com/skillbus/skillbus/pkg/events"
)

var demo = servicecmd.Command{
	Name:     "demo",
	Synopsis: "demo [flags] [DIR]",
	About:    "Does a demo.\nSecond line.",
	Examples: []string{"demo --own 3", "SKILLBUS_OWN=3 demo"},
}

// cleanEnv clears the variables Flags reads so the machine's environment
// does not leak into a test.
func cleanEnv(t *testing.T) {
	t.Helper()
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "SKILLBUS_") || strings.HasPrefix(name, "NATS_") || strings.HasPrefix(name, "OTEL_") {
			t.Setenv(name, "")
			os.Unsetenv(name)
		}
	}
}

// flags returns Flags parsed from args (and the environment) with an
// "own" int flag of the service itself; it fails t unless Parse says go on.
func flags(t *testing.T, args ...string) (*servicecmd.Flags, *flag.FlagSet, *int) {
	t.Helper()
	var f servicecmd.Flags
	fs := f.FlagSet(demo, io.Discard, io.Discard)
	own := fs.Int("own", 7, "a flag of the service itself")
	if code := f.Parse(fs, args, 1); code >= 0 {
		t.Fatalf("Parse(%q) = exit %d; want to go on", args, code)
	}
	return &f, fs, own
}

func TestFlagDefaults(t *testing.T) {
	cleanEnv(t)
	_, fs, _ := flags(t)
	tests := []struct{ flag, want string }{
		{"health-addr", ""}, {"shutdown-budget", "25s"}, {"replicas", "0"}, {"memory", "false"},
		{"log-level", "info"}, {"log-json", "false"}, {"version", "false"},
		{"nats", ""}, {"context", ""}, {"creds", ""}, {"nkey", ""}, {"tls-cert", ""}, {"tls-key", ""}, {"tls-ca", ""},
		{"own", "7"},
	}
	for _, tt := range tests {
		fl := fs.Lookup(tt.flag)
		if fl == nil {
			t.Errorf("--%s not registered", tt.flag)
			continue
		}
		if fl.DefValue != tt.want || fl.Usage == "" {
			t.Errorf("--%s default %q, usage %q; want default %q and a usage", tt.flag, fl.DefValue, fl.Usage, tt.want)
		}
	}
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	if n != len(tests) {
		t.Errorf("%d flags registered; want %d (no --embedded, --drain-timeout)", n, len(tests))
	}
}

func TestHelpAndVersion(t *testing.T) {
	cleanEnv(t)
	var f servicecmd.Flags
	var stdout, stderr strings.Builder
	fs := f.FlagSet(demo, &stdout, &stderr)
	fs.Int("own", 7, "a flag of the service `N`")
	if code := f.Parse(fs, []string{"--help"}, 1); code != 0 {
		t.Fatalf("Parse(--help) = %d; want 0", code)
	}
	help := stdout.String()
	for _, want := range []string{
		"Usage: demo [flags] [DIR]\n\nDoes a demo.\nSecond line.\n\nFlags:\n  --own N                 a flag of the service N (default 7)\n",
		"\nService flags (every skillbus service):\n",
		"  --health-addr ADDR      serve /livez, /readyz and /metrics",
		"  --shutdown-budget DURATION\n",
		"(default 25s)",
		"\nNATS connection (as the nats CLI reads it):\n  --nats URLS",
		"  --creds FILE ", "  --tls-ca FILE ",
		"SKILLBUS_<FLAG>", "(--health-addr: SKILLBUS_HEALTH_ADDR)",
		"\nExamples:\n  demo --own 3\n  SKILLBUS_OWN=3 demo\n",
		"\nExit codes: 0 stopped by SIGTERM",
	} {
		if !strings.Contains(help, want) {
			t.Errorf("help lacks %q:\n%s", want, help)
		}
	}
	if stderr.Len() != 0 {
		t.Errorf("help wrote to stderr: %q", stderr.String())
	}
	stdout.Reset()
	if code := f.Parse(fs, []string{"--version"}, 1); code != 0 || stdout.String() != "demo "+version.String()+"\n" {
		t.Errorf("--version = %d, %q; want 0, %q", code, stdout.String(), "demo "+version.String())
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--nope"}, "unknown flag --nope"},
		{[]string{"a", "b"}, `demo: at most 1 argument(s), got ["a" "b"]`},
		{[]string{"--shutdown-budget", "1ms"}, `--shutdown-budget "1ms": want at least 1s`},
		{[]string{"--health-addr", "garbage"}, `--health-addr "garbage": missing port in address; want HOST:PORT`},
		{[]string{"--health-addr", ":http-nope"}, `--health-addr ":http-nope": port "http-nope" is not a port number`},
		{[]string{"--replicas", "three"}, `demo: --replicas "three": not a whole number`},
	} {
		var f servicecmd.Flags
		var stderr strings.Builder
		fs := f.FlagSet(demo, io.Discard, &stderr)
		if code := f.Parse(fs, tc.args, 1); code != 2 || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("Parse(%q) = %d, %q; want 2 and %q", tc.args, code, stderr.String(), tc.want)
		}
		// The error comes first and alone: at most a pointer to --help
		// follows, not the 80 lines of help that pushed it off the screen.
		if lines := strings.Split(strings.TrimSpace(stderr.String()), "\n"); !strings.HasPrefix(lines[0], "demo: ") || len(lines) > 2 {
			t.Errorf("Parse(%q) printed %d line(s), the first %q; want the error first and at most a hint", tc.args, len(lines), lines[0])
		}
	}
}

// TestEnvironment: every flag is also SKILLBUS_<FLAG>; the command line
// wins; a malformed value is an error naming the variable; a variable that
// names no flag is warned about.
func TestEnvironment(t *testing.T) {
	cleanEnv(t)
	t.Setenv("SKILLBUS_OWN", "9")
	t.Setenv("SKILLBUS_HEALTH_ADDR", ":9100")
	t.Setenv("SKILLBUS_MEMORY", "true")
	t.Setenv("SKILLBUS_SHUTDOWN_BUDGET", "12s")
	t.Setenv("SKILLBUS_CREDS", "/etc/x.creds")
	t.Setenv("SKILLBUS_LOGLEVEL", "debug") // a typo: no such flag
	f, _, own := flags(t)
	if *own != 9 || f.HealthAddr != ":9100" || !f.Memory || f.ShutdownBudget != 12*time.Second {
		t.Errorf("from the environment: own %d, health %q, memory %v, budget %v", *own, f.HealthAddr, f.Memory, f.ShutdownBudget)
	}
	if f.Conn.Creds.V != "/etc/x.creds" || f.Conn.Creds.Source != "SKILLBUS_CREDS" {
		t.Errorf("creds = %+v; want the value with SKILLBUS_CREDS as its source", f.Conn.Creds)
	}
	var logOut strings.Builder
	if _, err := f.Logger(&logOut); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logOut.String(), "var=SKILLBUS_LOGLEVEL") {
		t.Errorf("no warning about SKILLBUS_LOGLEVEL: %q", logOut.String())
	}
	f, _, own = flags(t, "--own", "3", "--memory=false")
	if *own != 3 || f.Memory {
		t.Errorf("the command line should win: own %d, memory %v", *own, f.Memory)
	}
	for _, tc := range []struct{ name, value, want string }{
		{"SKILLBUS_OWN", "many", `SKILLBUS_OWN="many": not a whole number; want one such as 10 (the environment form of --own`},
		{"SKILLBUS_MEMORY", "yes", `SKILLBUS_MEMORY="yes": not a boolean; want true or false`},
		{"SKILLBUS_SHUTDOWN_BUDGET", "25", `SKILLBUS_SHUTDOWN_BUDGET="25": not a duration`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(tc.name, tc.value)
			var f servicecmd.Flags
			var stderr strings.Builder
			fs := f.FlagSet(demo, io.Discard, &stderr)
			fs.Int("own", 7, "")
			if code := f.Parse(fs, nil, 1); code != 2 || !strings.Contains(stderr.String(), "demo: "+tc.want) {
				t.Errorf("Parse with %s=%q = %d, %q; want 2 and %q", tc.name, tc.value, code, stderr.String(), tc.want)
			}
		})
	}
}

func TestLoggerAndProvision(t *testing.T) {
	cleanEnv(t)
	f, _, _ := flags(t, "--log-json", "--log-level", "warn", "--replicas", "3", "--memory")
	var out strings.Builder
	log, err := f.Logger(&out)
	if err != nil {
		t.Fatal(err)
	}
	log.Info("hidden")
	log.Warn("shown")
	if got := out.String(); !strings.HasPrefix(got, "{") || strings.Contains(got, "hidden") || !strings.Contains(got, "shown") {
		t.Errorf("Logger wrote %q; want JSON with the warning only", got)
	}
	if o := f.Provision(); o.Replicas != 3 || o.Storage != jetstream.MemoryStorage {
		t.Errorf("Provision() = %+v; want 3 replicas in memory", o)
	}
	f, _, _ = flags(t, "--log-level", "loud")
	if _, err := f.Logger(io.Discard); err == nil || err.Error() != `--log-level "loud": want debug, info, warn or error` {
		t.Errorf("Logger(--log-level loud) = %v", err)
	}
	// A value from the environment is named by its variable, unless the
	// command line overrode it.
	t.Setenv("SKILLBUS_LOG_LEVEL", "verbose")
	f, _, _ = flags(t)
	if _, err := f.Logger(io.Discard); err == nil || err.Error() != `SKILLBUS_LOG_LEVEL="verbose" (the environment form of --log-level): want debug, info, warn or error` {
		t.Errorf("Logger(SKILLBUS_LOG_LEVEL=verbose) = %v", err)
	}
	f, _, _ = flags(t, "--log-level=loud")
	if _, err := f.Logger(io.Discard); err == nil || err.Error() != `--log-level "loud": want debug, info, warn or error` {
		t.Errorf("Logger(SKILLBUS_LOG_LEVEL=verbose --log-level=loud) = %v", err)
	}
}

// fakeService is a Service whose Start and Stop the test controls.
type fakeService struct {
	nc           *nats.Conn
	fail         func(error)
	startRelease chan struct{} // Start waits for it (nil = at once)
	stopRelease  chan struct{} // Stop waits for it or its ctx (nil = at once)
	startErr     error
	stopCalled   chan struct{}

	mu           sync.Mutex
	stopDeadline time.Time
	stopAt       time.Time
}

func newFake() *fakeService { return &fakeService{stopCalled: make(chan struct{})} }

func (s *fakeService) Start(ctx context.Context) error {
	if s.startRelease != nil {
		select {
		case <-s.startRelease:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return s.startErr
}

func (s *fakeService) Stop(ctx context.Context) error {
	s.mu.Lock()
	s.stopDeadline, _ = ctx.Deadline()
	s.stopAt = time.Now()
	s.mu.Unlock()
	close(s.stopCalled)
	if s.stopRelease != nil {
		select {
		case <-s.stopRelease:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// connTo returns connection settings for url alone.
func connTo(url string) natsconn.Settings {
	return natsconn.Settings{URL: natsconn.Value{V: url, Source: "test"}}
}

// provision returns the provisioning options of f, for a Spec.
func provision(f *servicecmd.Flags) *events.Options {
	o := f.Provision()
	return &o
}

// running is a Run in a goroutine.
type running struct {
	log    servicecmdtest.Buffer
	cancel context.CancelFunc
	done   chan int
}

func start(t *testing.T, f *servicecmd.Flags, svc *fakeService) *running {
	t.Helper()
	r := &running{done: make(chan int, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	t.Cleanup(cancel)
	log := slog.New(slog.NewTextHandler(&r.log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	go func() {
		r.done <- f.Run(ctx, log, servicecmd.Spec{Provision: provision(f), New: func(rt servicecmd.Runtime) (servicecmd.Service, error) {
			svc.nc, svc.fail = rt.Conn, rt.Fail
			return svc, nil
		}})
	}()
	return r
}

func (r *running) waitLog(t *testing.T, want string) {
	t.Helper()
	r.log.WaitFor(t, want, servicecmdtest.Timeout, r.done)
}

func (r *running) exit(t *testing.T) int {
	t.Helper()
	select {
	case code := <-r.done:
		return code
	case <-time.After(servicecmdtest.Timeout):
		t.Fatalf("Run did not return:\n%s", r.log.String())
		return -1
	}
}

var addrRe = regexp.MustCompile(`msg="health endpoint listening" addr=(\S+)`)

func (r *running) healthURL(t *testing.T) string {
	t.Helper()
	r.waitLog(t, "health endpoint listening")
	m := addrRe.FindStringSubmatch(r.log.String())
	if m == nil {
		t.Fatalf("no health address in the log:\n%s", r.log.String())
	}
	return "http://" + m[1]
}

func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestRunLifecycle follows the probes through a whole life: live at once,
// ready only after Start returned, not ready as soon as the shutdown
// begins (while Stop still runs), metrics served all along.
func TestRunLifecycle(t *testing.T) {
	cleanEnv(t)
	srv := natsserver.StartTB(t, natsserver.Options{})
	f, _, _ := flags(t, "--nats", srv.ClientURL(), "--health-addr", "127.0.0.1:0", "--memory")
	svc := newFake()
	svc.startRelease, svc.stopRelease = make(chan struct{}), make(chan struct{})
	r := start(t, f, svc)
	base := r.healthURL(t)
	if code, _ := httpGet(t, base+"/livez"); code != 200 {
		t.Errorf("/livez = %d during start; want 200", code)
	}
	r.waitLog(t, "NATS connected")
	// Provisioned, but Start has not returned: not ready. The probe has no
	// event to wait on, so it is read again until the state shows.
	for deadline := time.Now().Add(servicecmdtest.Timeout); ; time.Sleep(10 * time.Millisecond) {
		code, body := httpGet(t, base+"/readyz")
		if code == 503 && body == "started: not yet\n" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz = %d %q; want 503 started: not yet", code, body)
		}
	}
	close(svc.startRelease)
	r.waitLog(t, "msg=ready")
	if code, body := httpGet(t, base+"/readyz"); code != 200 {
		t.Errorf("/readyz after Start = %d %q; want 200", code, body)
	}
	code, body := httpGet(t, base+"/metrics")
	for _, want := range []string{"skillbus_nats_connection_up{", "go_goroutine_count", `target_info{service_name="skillbus-demo"`} {
		if code != 200 || !strings.Contains(body, want) {
			t.Errorf("/metrics = %d, lacks %q", code, want)
		}
	}
	r.cancel() // SIGTERM
	<-svc.stopCalled
	if code, body := httpGet(t, base+"/readyz"); code != 503 || !strings.Contains(body, "stopping") {
		t.Errorf("/readyz while stopping = %d %q; want 503 stopping", code, body)
	}
	if code, _ := httpGet(t, base+"/livez"); code != 200 {
		t.Errorf("/livez while stopping = %d; want 200", code)
	}
	close(svc.stopRelease)
	if code := r.exit(t); code != 0 {
		t.Fatalf("Run = %d; want 0:\n%s", code, r.log.String())
	}
	if svc.nc.Status() != nats.CLOSED {
		t.Errorf("connection %v after Run; want closed (drained)", svc.nc.Status())
	}
	if _, err := http.Get(base + "/livez"); err == nil {
		t.Errorf("health endpoint still up after Run returned")
	}
}

// TestRunServiceFails: a service that reports a failure after its start
// (Runtime.Fail) is stopped and the process exits 1; a second report and
// one made during the shutdown are ignored.
func TestRunServiceFails(t *testing.T) {
	cleanEnv(t)
	srv := natsserver.StartTB(t, natsserver.Options{})
	f, _, _ := flags(t, "--nats", srv.ClientURL(), "--memory")
	svc := newFake()
	r := start(t, f, svc)
	r.waitLog(t, "msg=ready")
	svc.fail(errors.New("child gone"))
	svc.fail(errors.New("second"))
	<-svc.stopCalled
	svc.fail(errors.New("during the stop"))
	if code := r.exit(t); code != 1 {
		t.Fatalf("Run = %d after Fail; want 1:\n%s", code, r.log.String())
	}
	if out := r.log.String(); !strings.Contains(out, `msg="demo failed" err="child gone"`) || strings.Contains(out, "second") || strings.Contains(out, "during the stop") {
		t.Errorf("log:\n%s\nwant the first failure only", out)
	}
}

// TestRunShutdownBudget: Stop gets the stop share of the budget as its
// deadline, and a Stop that uses all of it still lets Run end within the
// budget (plus slack for a loaded machine).
func TestRunShutdownBudget(t *testing.T) {
	cleanEnv(t)
	srv := natsserver.StartTB(t, natsserver.Options{})
	const budget = 2 * time.Second
	f, _, _ := flags(t, "--nats", srv.ClientURL(), "--memory", "--shutdown-budget", budget.String())
	svc := newFake()
	svc.stopRelease = make(chan struct{}) // never released: Stop runs to its deadline
	r := start(t, f, svc)
	r.waitLog(t, "msg=ready")
	begin := time.Now()
	r.cancel()
	code := r.exit(t)
	took := time.Since(begin)
	if code != 0 {
		t.Fatalf("Run = %d; want 0:\n%s", code, r.log.String())
	}
	svc.mu.Lock()
	share := svc.stopDeadline.Sub(svc.stopAt)
	svc.mu.Unlock()
	want := time.Duration(float64(budget) * servicecmd.StopShare)
	if share > want || share < want-300*time.Millisecond {
		t.Errorf("Stop's deadline %v after it was called; want about %v (%.0f%% of %v)", share, want, servicecmd.StopShare*100, budget)
	}
	if took < want || took > budget+3*time.Second {
		t.Errorf("shutdown took %v; want between the stop share %v and the budget %v (+3s slack)", took, want, budget)
	}
}

// TestRunWaitsForNATS: a service started before NATS waits (not ready,
// saying so) and comes up when the server appears.
func TestRunWaitsForNATS(t *testing.T) {
	cleanEnv(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	f, _, _ := flags(t, "--nats", "nats://127.0.0.1:"+strconv.Itoa(port), "--health-addr", "127.0.0.1:0", "--memory")
	r := start(t, f, newFake())
	base := r.healthURL(t)
	r.waitLog(t, `msg="waiting for NATS"`)
	if code, body := httpGet(t, base+"/readyz"); code != 503 || !strings.Contains(body, "nats: ") {
		t.Errorf("/readyz without NATS = %d %q; want 503 naming nats", code, body)
	}
	natsserver.StartTB(t, natsserver.Options{Port: port})
	r.waitLog(t, "msg=ready")
	if code, _ := httpGet(t, base+"/readyz"); code != 200 {
		t.Errorf("/readyz once NATS is up = %d; want 200", code)
	}
	r.cancel()
	if code := r.exit(t); code != 0 {
		t.Fatalf("Run = %d; want 0", code)
	}
}

// TestNotReadyBeforeConditions: /readyz is 503 from its first probe,
// also while the first connection attempt is still under way. The server
// here accepts TCP connections and never says a word, so that attempt
// takes the whole connect timeout (5 s): before the readiness conditions
// were registered ahead of the health endpoint, /readyz answered 200 all
// that time (a seqworker "ready" at 133 ms that served at 10.7 s).
func TestNotReadyBeforeConditions(t *testing.T) {
	cleanEnv(t)
	mute, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer mute.Close()
	go func() {
		for {
			c, err := mute.Accept()
			if err != nil {
				return
			}
			defer c.Close() // held open, silent, until the test ends
		}
	}()
	f, _, _ := flags(t, "--nats", "nats://"+mute.Addr().String(), "--health-addr", "127.0.0.1:0")
	r := start(t, f, newFake())
	base := r.healthURL(t)
	// The behaviour is a span of time: /readyz is probed for 2 s while the
	// connection attempt hangs, and must say 503 throughout.
	for end := time.Now().Add(2 * time.Second); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		code, body := httpGet(t, base+"/readyz")
		if code != 503 {
			t.Fatalf("/readyz = %d %q while the first NATS connection attempt hangs; want 503\n%s", code, body, r.log.String())
		}
		if !strings.Contains(body, "nats: ") || !strings.Contains(body, "started: not yet") {
			t.Fatalf("/readyz body %q; want the nats and started conditions listed", body)
		}
	}
	r.cancel()
	if code := r.exit(t); code != 0 {
		t.Fatalf("Run = %d; want 0\n%s", code, r.log.String())
	}
}

// TestRunStopWhileWaiting: SIGTERM while NATS is unreachable ends the
// wait: exit 0, no hang.
func TestRunStopWhileWaiting(t *testing.T) {
	cleanEnv(t)
	f, _, _ := flags(t, "--nats", "nats://127.0.0.1:1", "--shutdown-budget", "2s")
	r := start(t, f, newFake())
	r.waitLog(t, `msg="waiting for NATS"`)
	r.cancel()
	if code := r.exit(t); code != 0 {
		t.Fatalf("Run = %d; want 0:\n%s", code, r.log.String())
	}
}

// TestRunConnectionClosedForGood: the server comes back refusing the
// service's password; nats.go gives up and the process must exit 1 (so
// it is restarted), not live on serving nothing.
func TestRunConnectionClosedForGood(t *testing.T) {
	cleanEnv(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	dir := t.TempDir()
	srv, err := natsserver.Start(natsserver.Options{Port: port, StoreDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	f, _, _ := flags(t, "--nats", "nats://127.0.0.1:"+strconv.Itoa(port), "--memory")
	svc := newFake()
	r := start(t, f, svc)
	r.waitLog(t, "msg=ready")
	srv.Shutdown()
	// The same port, now with a user the service does not have.
	locked := startWithUser(t, port, t.TempDir())
	defer locked.Shutdown()
	code := r.exit(t)
	if code != 1 {
		t.Fatalf("Run = %d after its credentials were refused; want 1:\n%s", code, r.log.String())
	}
	for _, want := range []string{`msg="NATS connection closed for good"`, "exiting so that it is restarted", "stopCalled"} {
		if want == "stopCalled" {
			select {
			case <-svc.stopCalled:
			default:
				t.Errorf("the service was not stopped")
			}
			continue
		}
		if !strings.Contains(r.log.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, r.log.String())
		}
	}
}

func TestRunFailures(t *testing.T) {
	cleanEnv(t)
	srv := natsserver.StartTB(t, natsserver.Options{})
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	tests := []struct {
		name     string
		env      map[string]string
		args     []string
		startErr error
		code     int
		want     string
	}{
		{"service fails to start", nil, []string{"--nats", srv.ClientURL()}, errors.New("bucket gone"), 1, `msg="demo failed" err="bucket gone"`},
		{"missing creds file", nil, []string{"--nats", srv.ClientURL(), "--creds", "/nope.creds"}, nil, 2, "credentials file /nope.creds (--creds): no such file"},
		{"health address in use", nil, []string{"--nats", srv.ClientURL(), "--health-addr", busy.Addr().String()}, nil, 1, "cannot serve the health endpoint"},
		{"bad trace exporter", map[string]string{"OTEL_TRACES_EXPORTER": "jaegr"}, []string{"--nats", srv.ClientURL()}, nil, 2, "OTEL_TRACES_EXPORTER"},
		{"bad metrics exporter", map[string]string{"OTEL_METRICS_EXPORTER": "prometheos"}, []string{"--nats", srv.ClientURL()}, nil, 2, "OTEL_METRICS_EXPORTER"},
		{"bad provisioning options", nil, []string{"--nats", srv.ClientURL(), "--replicas", "7"}, nil, 2, "Replicas = 7"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			f, _, _ := flags(t, tt.args...)
			svc := newFake()
			svc.startErr = tt.startErr
			r := start(t, f, svc)
			if code := r.exit(t); code != tt.code {
				t.Errorf("Run(%q) = %d; want %d:\n%s", tt.args, code, tt.code, r.log.String())
			}
			if !strings.Contains(r.log.String(), tt.want) {
				t.Errorf("Run(%q) logged:\n%s\nwant it to contain %q", tt.args, r.log.String(), tt.want)
			}
		})
	}
}

// TestRunDrains: what the service's subscriptions still hold when it has
// stopped is handled (the drain lets handlers finish), and what those
// handlers publish goes out.
func TestRunDrains(t *testing.T) {
	cleanEnv(t)
	const n = 20
	srv := natsserver.StartTB(t, natsserver.Options{})
	obs := natsserver.ConnectTB(t, srv)
	got, err := obs.SubscribeSync("demo.out")
	if err != nil {
		t.Fatal(err)
	}
	if err := obs.Flush(); err != nil {
		t.Fatal(err)
	}
	f, _, _ := flags(t, "--nats", srv.ClientURL())
	svc := &drainService{started: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() {
		done <- f.Run(ctx, slog.New(slog.DiscardHandler), servicecmd.Spec{New: func(rt servicecmd.Runtime) (servicecmd.Service, error) {
			svc.nc = rt.Conn
			return svc, nil
		}})
	}()
	select {
	case <-svc.started:
	case code := <-done:
		t.Fatalf("Run = %d before the service started", code)
	case <-time.After(servicecmdtest.Timeout):
		t.Fatal("service not started")
	}
	for i := range n {
		if err := obs.Publish("demo.in", []byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := obs.Flush(); err != nil {
		t.Fatal(err)
	}
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("Run = %d", code)
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

// drainService echoes demo.in to demo.out slowly, so messages are still
// queued when it is stopped; started is closed once it subscribed.
type drainService struct {
	nc      *nats.Conn
	started chan struct{}
}

func (s *drainService) Start(context.Context) error {
	_, err := s.nc.Subscribe("demo.in", func(m *nats.Msg) {
		time.Sleep(5 * time.Millisecond) // the handler's own slowness: messages queue up behind it
		_ = s.nc.Publish("demo.out", m.Data)
	})
	if err == nil {
		err = s.nc.Flush()
	}
	if err == nil {
		close(s.started)
	}
	return err
}

func (s *drainService) Stop(context.Context) error { return nil }

// TestProvisionRetryThreeNodes starts three provisioners at the same moment
// with --replicas 3 against the three nodes of a fresh cluster, as three
// services started together do: all must succeed.
func TestProvisionRetryThreeNodes(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 3-node cluster")
	}
	nodes, err := natsserver.StartCluster(3, "provision", t.TempDir(), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer natsserver.ShutdownAll(nodes)
	opts := []events.Options{
		{Replicas: 3},                            // registry
		{Replicas: 3, SessionsTTL: time.Hour},    // skillface
		{Replicas: 3, AckWait: 30 * time.Second}, // seqworker
	}
	var log servicecmdtest.Buffer
	logger := slog.New(slog.NewTextHandler(&log, nil))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	errs := make(chan error, len(opts))
	gate := make(chan struct{})
	for i, o := range opts {
		nc := natsserver.ConnectTB(t, nodes[i])
		js, err := jetstream.New(nc)
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			<-gate
			errs <- servicecmd.ProvisionRetry(ctx, logger, js, o)
		}()
	}
	close(gate)
	for range opts {
		if err := <-errs; err != nil {
			t.Fatalf("ProvisionRetry: %v\n%s", err, log.String())
		}
	}
	js, _ := jetstream.New(natsserver.ConnectTB(t, nodes[0]))
	for _, name := range []string{events.StreamSeqRuns, events.StreamEvents, "KV_" + events.BucketRuns} {
		s, err := js.Stream(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		if r := s.CachedInfo().Config.Replicas; r != 3 {
			t.Errorf("stream %s has %d replicas; want 3", name, r)
		}
	}
	t.Logf("provisioning log (retries, if any):\n%s", log.String())
}

func TestProvisionRetryBadOptions(t *testing.T) {
	srv := natsserver.StartTB(t, natsserver.Options{})
	js, _ := jetstream.New(natsserver.ConnectTB(t, srv))
	start := time.Now()
	err := servicecmd.ProvisionRetry(context.Background(), slog.New(slog.DiscardHandler), js, events.Options{Replicas: 9})
	if !errors.Is(err, events.ErrOptions) || time.Since(start) > 5*time.Second {
		t.Errorf("ProvisionRetry(Replicas 9) = %v after %v; want ErrOptions at once", err, time.Since(start))
	}
}
