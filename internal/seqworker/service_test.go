package seqworker

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/micro"

	"github.com/skillbus/skillbus/internal/natsserver"
	"github.com/skillbus/skillbus/pkg/events"
)

// TestServiceRepliesOffHandler: the endpoints answer on their own
// goroutines after micro's handler has returned. Many concurrent requests
// answered with errors and with results must all get their answer, and
// (under -race) the answers must not touch micro's request bookkeeping,
// which the service reads once the handler returns (replying through
// micro.Request from the async goroutine was a data race).
func TestServiceRepliesOffHandler(t *testing.T) {
	srv := natsserver.StartTB(t, natsserver.Options{})
	nc := natsserver.ConnectTB(t, srv)
	w := startTestWorker(t, nc, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl := natsserver.ConnectTB(t, srv)

	var wg sync.WaitGroup
	errs := make(chan error, 200)
	for i := range 200 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Every other request is bad (400), the rest ask for an
			// unknown run (404): both are error replies, the path of the
			// race.
			body := []byte(fmt.Sprintf(`{"v":1,"run_id":"no-such-run-%d"}`, i))
			want := "404"
			if i%2 == 0 {
				body, want = []byte(`{"v":1,"run_id":"bad id!"}`), "400"
			}
			m, err := cl.RequestWithContext(ctx, events.SeqStatusSubject, body)
			if err != nil {
				errs <- fmt.Errorf("request %d: %w", i, err)
				return
			}
			if got := m.Header.Get(micro.ErrorCodeHeader); got != want {
				errs <- fmt.Errorf("request %d: code %q (%s); want %s", i, got, m.Header.Get(micro.ErrorHeader), want)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	// The service still counts its requests (micro's own bookkeeping).
	st := w.svc.Stats()
	var n int
	for _, ep := range st.Endpoints {
		n += ep.NumRequests
	}
	if n < 200 {
		t.Errorf("the service counted %d requests; want at least 200", n)
	}
}

// touchRequest is a micro.Request that records use after its handler
// returned.
type touchRequest struct {
	mu       sync.Mutex
	returned bool
	late     []string
}

func (r *touchRequest) use(what string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.returned {
		r.late = append(r.late, what)
	}
}
func (r *touchRequest) Respond([]byte, ...micro.RespondOpt) error { r.use("Respond"); return nil }
func (r *touchRequest) RespondJSON(any, ...micro.RespondOpt) error {
	r.use("RespondJSON")
	return nil
}
func (r *touchRequest) Error(string, string, []byte, ...micro.RespondOpt) error {
	r.use("Error")
	return nil
}
func (r *touchRequest) Data() []byte           { r.use("Data"); return []byte("{}") }
func (r *touchRequest) Headers() micro.Headers { r.use("Headers"); return nil }
func (r *touchRequest) Subject() string        { r.use("Subject"); return "skillbus.seq.status" }
func (r *touchRequest) Reply() string          { r.use("Reply"); return "_INBOX.test" }

// TestAsyncDoesNotTouchMicroRequest: the async wrapper answers through a
// detached copy; the micro.Request itself is never used once the micro
// handler has returned, however late the endpoint's handler answers.
func TestAsyncDoesNotTouchMicroRequest(t *testing.T) {
	srv := natsserver.StartTB(t, natsserver.Options{})
	nc := natsserver.ConnectTB(t, srv)
	w, err := New(nc, Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	returned := make(chan struct{})
	answered := make(chan struct{})
	h := w.async(func(_ context.Context, req micro.Request) {
		<-returned // answer only after the micro handler returned
		_ = req.Data()
		_ = req.Error("400", "bad", nil)
		_ = req.Respond([]byte("{}"))
		close(answered)
	})
	req := &touchRequest{}
	h.Handle(req)
	req.mu.Lock()
	req.returned = true
	req.mu.Unlock()
	close(returned)
	select {
	case <-answered:
	case <-time.After(10 * time.Second):
		t.Fatal("the endpoint handler never ran")
	}
	w.inflight.Wait()
	req.mu.Lock()
	defer req.mu.Unlock()
	if len(req.late) > 0 {
		t.Errorf("the micro.Request was used after its handler returned: %v; want every late answer through a detached copy", req.late)
	}
}
