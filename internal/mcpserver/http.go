package mcpserver

import (
	"crypto/subtle"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillbus/skillbus/internal/httplimit"
)

// HTTPPath is where HTTPHandler serves the streamable HTTP transport.
const HTTPPath = "/mcp"

// MinTokenLength is the shortest token HTTPHandler accepts.
const MinTokenLength = 16

// HTTPOptions configure HTTPHandler.
type HTTPOptions struct {
	// Token, when set, is required on every request as "Authorization:
	// Bearer TOKEN" (401 otherwise). ListenAddr refuses a non-loopback
	// address without one.
	Token string
	// SessionTimeout closes a session idle this long; default 30 minutes.
	SessionTimeout time.Duration
	// MaxSessions caps the open sessions; default
	// httplimit.DefaultMaxSessions (256). A new session over it is
	// answered 503 naming --max-sessions (docs/mcp.md).
	MaxSessions int
	// BodyTimeout is how long a request body may take to arrive; default
	// httplimit.DefaultBodyTimeout (10 s). A body still arriving then is
	// answered 408 and its connection closed (docs/mcp.md).
	BodyTimeout time.Duration
}

// ListenAddr returns the address to listen on for addr (a host, host:port
// or :port): a missing host is 127.0.0.1 (this machine only). Errors: a
// malformed address; an address other machines can reach (any host that
// is not a loopback name or address, including 0.0.0.0 and ::) without a
// token, or a token shorter than MinTokenLength.
func ListenAddr(addr, token string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		if strings.Count(addr, ":") == 0 && addr != "" {
			return "", fmt.Errorf("--listen %q: give HOST:PORT or :PORT, for example 127.0.0.1:8931 or :8931", addr)
		}
		return "", fmt.Errorf("--listen %q: %v", addr, err)
	}
	if host == "" {
		host = "127.0.0.1"
	}
	if token != "" && len(token) < MinTokenLength {
		return "", fmt.Errorf("the token is %d characters; use at least %d random characters (for example `openssl rand -hex 24`)", len(token), MinTokenLength)
	}
	if !loopback(host) && token == "" {
		return "", fmt.Errorf("--listen %s: other machines can reach this address, so a token is required (--token-file FILE or SKILLBUS_MCP_TOKEN); or listen on 127.0.0.1", addr)
	}
	return net.JoinHostPort(host, port), nil
}

func loopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// HTTPHandler serves the MCP server over the streamable HTTP transport at
// HTTPPath, one MCP session per client, with the SDK's protection against
// DNS rebinding, cross-origin browser requests refused, and the bearer
// token of o required when set.
func (s *Server) HTTPHandler(o HTTPOptions) http.Handler {
	if o.SessionTimeout == 0 {
		o.SessionTimeout = 30 * time.Minute
	}
	if o.MaxSessions <= 0 {
		o.MaxSessions = httplimit.DefaultMaxSessions
	}
	if o.BodyTimeout <= 0 {
		o.BodyTimeout = httplimit.DefaultBodyTimeout
	}
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.mcp }, &mcp.StreamableHTTPOptions{
		SessionTimeout: o.SessionTimeout,
		Logger:         s.log,
	})
	mux := http.NewServeMux()
	mux.Handle(HTTPPath, http.NewCrossOriginProtection().Handler(httplimit.Body(s.capSessions(h, o.MaxSessions), o.BodyTimeout, 0, "--body-timeout")))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "skillbus MCP server: the endpoint is "+HTTPPath, http.StatusNotFound)
	})
	if o.Token == "" {
		return mux
	}
	want := []byte("Bearer " + o.Token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got := []byte(r.Header.Get("Authorization"))
		if subtle.ConstantTimeCompare(got, want) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="skillbus"`)
			http.Error(w, "skillbus MCP server: missing or wrong token: send Authorization: Bearer TOKEN", http.StatusUnauthorized)
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// capSessions refuses a request that would open a session (a POST without
// an Mcp-Session-Id header: an initialize) while max sessions are open.
// Such requests are handled one at a time, so the count cannot be passed
// by requests racing each other; the others go through at once.
func (s *Server) capSessions(h http.Handler, max int) http.Handler {
	var opening sync.Mutex
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.Header.Get("Mcp-Session-Id") != "" {
			h.ServeHTTP(w, r)
			return
		}
		opening.Lock()
		defer opening.Unlock()
		n := 0
		for range s.mcp.Sessions() {
			n++
		}
		if n >= max {
			httplimit.Refuse(w, max, "MCP sessions", "--max-sessions")
			return
		}
		h.ServeHTTP(w, r)
	})
}
