package servicecmd_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/skillbus/skillbus/internal/auth"
	"github.com/skillbus/skillbus/internal/natsserver"
	"github.com/skillbus/skillbus/internal/servicecmd"
	"github.com/skillbus/skillbus/internal/servicecmd/servicecmdtest"
)

// subscriber is a Service whose Start subscribes to subject (as an
// endpoint would) and returns at once, whatever the server says.
type subscriber struct {
	nc      *nats.Conn
	subject string
}

func (s *subscriber) Start(context.Context) error {
	_, err := s.nc.QueueSubscribe(s.subject, "q", func(*nats.Msg) {})
	return err
}
func (s *subscriber) Stop(context.Context) error { return nil }

// TestRefusedSubscriptionNotReadyThenExit: a service whose subscription
// the NATS server refuses (its user may not subscribe there) is not ready
// — /readyz names the subject and the credentials — and, the refusal
// persisting through a reconnect, exits 1 with a message naming both.
// Before, the refusal was a warning in the log and the process reported
// ready while serving nothing.
func TestRefusedSubscriptionNotReadyThenExit(t *testing.T) {
	cleanEnv(t)
	setup, err := auth.Generate(auth.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	srv := natsserver.StartTB(t, natsserver.Options{ConfigFile: setup.AuthConfig()})
	creds := setup.CredsFile(auth.RoleTools)
	f, _, _ := flags(t, "--nats", srv.ClientURL(), "--creds", creds, "--health-addr", "127.0.0.1:0")
	var logs servicecmdtest.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	o := servicecmd.Options{Name: "demo", Conn: f.Conn, HealthAddr: "127.0.0.1:0", RefusalPatience: 3 * time.Second}
	done := make(chan int, 1)
	begin := time.Now()
	go func() {
		done <- servicecmd.Serve(context.Background(), log, o, servicecmd.Spec{New: func(rt servicecmd.Runtime) (servicecmd.Service, error) {
			return &subscriber{nc: rt.Conn, subject: "tool.web.fetch"}, nil // the tools role answers fs.*, text.*, cmd.* only
		}})
	}()
	logs.WaitFor(t, "not ready: the NATS server refused", servicecmdtest.Timeout, done)
	m := addrRe.FindStringSubmatch(logs.String())
	if m == nil {
		t.Fatalf("no health address in the log:\n%s", logs.String())
	}
	// Not ready, every probe, until it exits.
	probes := 0
	for {
		select {
		case code := <-done:
			if code != 1 {
				t.Errorf("exit %d; want 1", code)
			}
			out := logs.String()
			for _, want := range []string{"tool.web.fetch (queue q)", creds, "role tools", "still after 3s", "docs/security.md"} {
				if !strings.Contains(out, want) {
					t.Errorf("the log does not name %q:\n%s", want, out)
				}
			}
			if took := time.Since(begin); took > 3*time.Second+servicecmdtest.Timeout {
				t.Errorf("exited after %v; want soon after the 3 s patience", took)
			}
			if strings.Contains(out, "msg=ready") {
				t.Errorf("the log says ready:\n%s", out)
			}
			if probes == 0 {
				t.Error("no probe was made while it ran")
			}
			return
		default:
		}
		resp, err := httpGetOrGone("http://" + m[1] + "/readyz")
		if err == nil {
			probes++
			if resp.code != 503 || !strings.Contains(resp.body, "subscriptions: the NATS server refused the subscription to tool.web.fetch (queue q) for the credentials creds "+creds) {
				t.Fatalf("/readyz = %d %q while the subscription is refused; want 503 naming it and the creds", resp.code, resp.body)
			}
		}
		time.Sleep(50 * time.Millisecond) // the pace of the probes while it runs, as a kubelet's
	}
}

type response struct {
	code int
	body string
}

// httpGetOrGone is an HTTP GET that may fail: the process may be exiting.
func httpGetOrGone(url string) (response, error) {
	resp, err := http.Get(url)
	if err != nil {
		return response{}, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return response{resp.StatusCode, string(b)}, nil
}

// TestRefusedSubscriptionShown: a service that shows its refusals itself
// (Spec.ShowsRefusals: the web console) is ready with a subscription the
// NATS server refuses, says so once in the log, and runs on well past the
// refusal patience until it is stopped, then exits 0. Before, `skillbus ui`
// with credentials lacking a permission exited 1 after about 32 s.
func TestRefusedSubscriptionShown(t *testing.T) {
	cleanEnv(t)
	setup, err := auth.Generate(auth.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	srv := natsserver.StartTB(t, natsserver.Options{ConfigFile: setup.AuthConfig()})
	creds := setup.CredsFile(auth.RoleTools)
	f, _, _ := flags(t, "--nats", srv.ClientURL(), "--creds", creds, "--health-addr", "127.0.0.1:0")
	var logs servicecmdtest.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	const patience = 300 * time.Millisecond
	o := servicecmd.Options{Name: "demo", Conn: f.Conn, HealthAddr: "127.0.0.1:0", RefusalPatience: patience}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan int, 1)
	go func() {
		done <- servicecmd.Serve(ctx, log, o, servicecmd.Spec{ShowsRefusals: true, New: func(rt servicecmd.Runtime) (servicecmd.Service, error) {
			return &subscriber{nc: rt.Conn, subject: "tool.web.fetch"}, nil
		}})
	}()
	for deadline := time.Now().Add(servicecmdtest.Timeout); !strings.Contains(logs.String(), "ready without some of its subscriptions"); time.Sleep(10 * time.Millisecond) {
		select {
		case code := <-done:
			t.Fatalf("exited %d; log:\n%s", code, logs.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no warning of the refusal; log:\n%s", logs.String())
		}
	}
	if out := logs.String(); !strings.Contains(out, "tool.web.fetch") || !strings.Contains(out, creds) {
		t.Errorf("the warning does not name the subject and the creds:\n%s", out)
	}
	m := addrRe.FindStringSubmatch(logs.String())
	if m == nil {
		t.Fatalf("no health address in the log:\n%s", logs.String())
	}
	// Ready, and still running after ten times the patience.
	for end := time.Now().Add(10 * patience); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		select {
		case code := <-done:
			t.Fatalf("exited %d with a refusal it shows itself; log:\n%s", code, logs.String())
		default:
		}
		if resp, err := httpGetOrGone("http://" + m[1] + "/readyz"); err != nil || resp.code != 200 {
			t.Fatalf("/readyz = %+v, %v; want 200", resp, err)
		}
	}
	cancel()
	if code := <-done; code != 0 {
		t.Errorf("exit %d after the stop; want 0; log:\n%s", code, logs.String())
	}
}
