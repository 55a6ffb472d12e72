package console

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
)

// NATSState is the console's own NATS connection as the page shows it
// (docs/console.md, "Live updates"): in GET /api/info and the stream's
// hello as "nats", and as a "nats" event on every stream when it changes.
type NATSState struct {
	// Connected is true while the connection is up.
	Connected bool `json:"connected"`
	// Since is when the connection went down (zero while connected).
	Since time.Time `json:"since,omitzero"`
	// Error is the connection's last error while it is down ("" when none
	// is known).
	Error string `json:"error,omitempty"`
}

// natsWatch follows the console's NATS connection through nats.go's
// status listener (CONNECTED, RECONNECTING, DISCONNECTED, CLOSED).
type natsWatch struct {
	nc    *nats.Conn
	mu    sync.Mutex
	since time.Time // when it went down; zero while up
}

// state returns the connection's state now: nc.Status() decides, so an
// action checks the truth, not the last event.
func (n *natsWatch) state() NATSState {
	up := n.nc.Status() == nats.CONNECTED
	n.mu.Lock()
	defer n.mu.Unlock()
	if up {
		n.since = time.Time{}
		return NATSState{Connected: true}
	}
	if n.since.IsZero() {
		n.since = time.Now()
	}
	st := NATSState{Since: n.since}
	if err := n.nc.LastError(); err != nil {
		st.Error = err.Error()
	}
	return st
}

// run sends the state to every stream each time the connection's status
// changes, until ctx is done.
func (n *natsWatch) run(ctx context.Context, h *hub) {
	ch := n.nc.StatusChanged()
	defer n.nc.RemoveStatusListener(ch)
	for {
		select {
		case <-ctx.Done():
			return
		case _, ok := <-ch:
			if !ok {
				return
			}
			h.broadcast("nats", n.state())
		}
	}
}

// downText says why an action cannot be sent while the connection is
// down: the NATS server is unreachable, since when, and what to do.
func (s *Server) downText(st NATSState) string {
	where := "the NATS server"
	if s.cfg.NATSURL != "" {
		where += " at " + s.cfg.NATSURL
	}
	msg := fmt.Sprintf("%s is unreachable: the console lost its connection at %s (%s ago) and is reconnecting", where,
		st.Since.UTC().Format("15:04:05 UTC"), time.Since(st.Since).Round(time.Second))
	if st.Error != "" {
		msg += " (" + st.Error + ")"
	}
	return msg + "; nothing was sent. Try again once the page says live"
}

// natsDownError ends an action's context when the console's NATS
// connection goes down while the action waits for its answer; writeFail
// answers it 503 with its text.
type natsDownError struct{ msg string }

func (e *natsDownError) Error() string { return e.msg }

// needsNATS answers an action at once with 503 while the console's NATS
// connection is down, instead of letting its request wait for a timeout
// in the reconnect buffer; an action in flight when the connection goes
// down is answered the same way at that moment (docs/console.md, "Live
// updates").
func (s *Server) needsNATS(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithCancelCause(r.Context())
		defer cancel(nil)
		ch := s.nc.StatusChanged(nats.RECONNECTING, nats.DISCONNECTED, nats.CLOSED)
		defer s.nc.RemoveStatusListener(ch)
		if st := s.natsw.state(); !st.Connected {
			writeErr(w, http.StatusServiceUnavailable, "503", s.downText(st))
			return
		}
		go func() {
			select {
			case _, ok := <-ch:
				if ok {
					cancel(&natsDownError{msg: s.downText(s.natsw.state())})
				}
			case <-ctx.Done():
			}
		}()
		h(w, r.WithContext(ctx))
	}
}
