// Package httplimit bounds what one client can hold of skillbus's HTTP
// servers (`skillbus mcp serve --listen`, docs/mcp.md; `skillbus ui`,
// docs/console.md): a request body must arrive within a deadline, and
// long-lived things — MCP sessions, the console's event streams — are
// counted against a cap. A request over a limit gets a plain-text answer
// that names the limit and the flag that raises it.
package httplimit

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"
)

// Defaults of the limits (docs/mcp.md, docs/console.md).
const (
	// DefaultBodyTimeout is how long a request body may take to arrive,
	// counted from the end of its headers.
	DefaultBodyTimeout = 10 * time.Second
	// DefaultMaxSessions caps the MCP sessions of one `mcp serve
	// --listen`.
	DefaultMaxSessions = 256
	// DefaultMaxStreams caps the console's open event streams (one per
	// open page).
	DefaultMaxStreams = 64
	// DefaultIdleTimeout closes a keep-alive connection with no request.
	DefaultIdleTimeout = 2 * time.Minute
)

// Body returns h with every request body read in full before h runs:
// within timeout (from the moment h would have been called) and at most
// maxBytes (0: no size limit here). A body that is not complete in time
// is answered 408 and the connection closed; one that is larger, 413.
// flag names the setting that changes the timeout, for the message. A
// request without a body (GET, or Content-Length 0) is passed on at once.
func Body(h http.Handler, timeout time.Duration, maxBytes int64, flag string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
			h.ServeHTTP(w, r)
			return
		}
		rc := http.NewResponseController(w)
		_ = rc.SetReadDeadline(time.Now().Add(timeout))
		var src io.Reader = r.Body
		if maxBytes > 0 {
			src = http.MaxBytesReader(w, r.Body, maxBytes)
		}
		body, err := io.ReadAll(src)
		var tooLarge *http.MaxBytesError
		switch {
		case errors.As(err, &tooLarge):
			http.Error(w, fmt.Sprintf("the request body is larger than %d bytes", tooLarge.Limit), http.StatusRequestEntityTooLarge)
			return
		case errors.Is(err, os.ErrDeadlineExceeded):
			w.Header().Set("Connection", "close")
			http.Error(w, fmt.Sprintf("the request body did not arrive within %s (%s); send it at once", timeout, flag), http.StatusRequestTimeout)
			return
		case err != nil:
			http.Error(w, "reading the request body: "+err.Error(), http.StatusBadRequest)
			return
		}
		_ = rc.SetReadDeadline(time.Time{}) // the handler may hold the connection (a stream)
		r.Body = io.NopCloser(bytes.NewReader(body))
		h.ServeHTTP(w, r)
	})
}

// Gate counts long-lived things against a cap. Its zero value admits
// nothing; make one with NewGate.
type Gate struct {
	max  int
	what string // "MCP sessions", for messages
	flag string // the flag that raises max

	mu sync.Mutex // mu guards n
	n  int
}

// NewGate returns a gate admitting max at once. what names the things
// counted and flag the setting that raises max, for the refusal.
func NewGate(max int, what, flag string) *Gate { return &Gate{max: max, what: what, flag: flag} }

// Enter takes a place, or answers w with 503 (and Retry-After) and
// returns false when all max are taken. A caller that got true calls
// Leave once, when the thing ends.
func (g *Gate) Enter(w http.ResponseWriter) bool {
	g.mu.Lock()
	ok := g.n < g.max
	if ok {
		g.n++
	}
	g.mu.Unlock()
	if !ok {
		Refuse(w, g.max, g.what, g.flag)
	}
	return ok
}

// Leave gives a place back.
func (g *Gate) Leave() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.n > 0 {
		g.n--
	}
}

// Refuse answers 503 saying that max of what are open.
func Refuse(w http.ResponseWriter, max int, what, flag string) {
	w.Header().Set("Retry-After", strconv.Itoa(5))
	http.Error(w, fmt.Sprintf("this server already has %d %s open, its limit (%s); close some, or wait for idle ones to end, and try again", max, what, flag), http.StatusServiceUnavailable)
}
