package health_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/skillbus/skillbus/internal/health"
)

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestNoConditionsIsNotReady: a Readiness nobody registered a condition
// on yet is not ready, so a health endpoint started before its process
// registers its conditions never answers 200 too early.
func TestNoConditionsIsNotReady(t *testing.T) {
	var ready health.Readiness
	s, err := health.Listen("127.0.0.1:0", &ready, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown(context.Background())
	if code, body := get(t, "http://"+s.Addr()+"/readyz"); code != 503 || !strings.Contains(body, "no readiness condition") {
		t.Errorf("/readyz with no condition = %d %q; want 503", code, body)
	}
	ready.Check("nats", func() error { return nil })
	if code, body := get(t, "http://"+s.Addr()+"/readyz"); code != 200 {
		t.Errorf("/readyz once its one condition holds = %d %q; want 200", code, body)
	}
}

func TestEndpoints(t *testing.T) {
	var ready health.Readiness
	connected := errors.New("disconnected")
	ready.Check("nats", func() error { return connected })
	loaded := ready.Gate("skills loaded")
	metrics := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("m 1\n")) })
	s, err := health.Listen("127.0.0.1:0", &ready, metrics)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown(context.Background())
	base := "http://" + s.Addr()

	steps := []struct {
		name     string
		do       func()
		path     string
		wantCode int
		wantBody string
	}{
		{"live while nothing holds", nil, "/livez", 200, "ok\n"},
		{"not ready: both fail", nil, "/readyz", 503, "nats: disconnected\nskills loaded: not yet\n"},
		{"connected, not loaded", func() { connected = nil }, "/readyz", 503, "skills loaded: not yet\n"},
		{"gate open", func() { loaded.Open() }, "/readyz", 200, "ok\n"},
		{"verbose", nil, "/readyz?verbose", 200, "nats: ok\nskills loaded: ok\nok\n"},
		{"gate failed again", func() { loaded.Fail(errors.New("watch lost")) }, "/readyz", 503, "skills loaded: watch lost\n"},
		{"gate reopened", func() { loaded.Fail(nil) }, "/readyz", 200, "ok\n"},
		{"stopping wins", func() { ready.Stopping() }, "/readyz", 503, "stopping: shutting down\n"},
		{"still live when stopping", nil, "/livez", 200, "ok\n"},
		{"metrics", nil, "/metrics", 200, "m 1\n"},
		{"unknown path", nil, "/nope", 404, ""},
	}
	for _, st := range steps {
		if st.do != nil {
			st.do()
		}
		code, body := get(t, base+st.path)
		if code != st.wantCode || (st.wantBody != "" && body != st.wantBody) {
			t.Errorf("%s: GET %s = %d %q; want %d %q", st.name, st.path, code, body, st.wantCode, st.wantBody)
		}
	}
	if err := ready.Err(); err == nil || !strings.Contains(err.Error(), "shutting down") {
		t.Errorf("Err() = %v; want shutting down", err)
	}
}

func TestNoMetricsAndPortInUse(t *testing.T) {
	var ready health.Readiness
	s, err := health.Listen("127.0.0.1:0", &ready, nil)
	if err != nil {
		t.Fatal(err)
	}
	if code, _ := get(t, "http://"+s.Addr()+"/metrics"); code != 404 {
		t.Errorf("/metrics without a handler = %d; want 404", code)
	}
	if _, err := health.Listen(s.Addr(), &ready, nil); err == nil || !strings.Contains(err.Error(), s.Addr()) {
		t.Errorf("Listen on a port in use = %v; want an error naming the address", err)
	}
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := s.Shutdown(context.Background()); err != nil {
		t.Errorf("second Shutdown = %v", err)
	}
	if _, err := http.Get("http://" + s.Addr() + "/livez"); err == nil {
		t.Errorf("server still answers after Shutdown")
	}
}
