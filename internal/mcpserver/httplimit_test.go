package mcpserver_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillbus/skillbus/internal/mcpserver"
	"github.com/skillbus/skillbus/internal/mcpserver/mcpservertest"
)

// TestHTTPMaxSessions: with MaxSessions 3, three clients get a session
// and a fourth is answered 503 naming --max-sessions; once one session
// is closed, a new one is made.
func TestHTTPMaxSessions(t *testing.T) {
	srv, _ := withServer(t, mcpserver.Config{})
	hs := httptest.NewServer(srv.HTTPHandler(mcpserver.HTTPOptions{MaxSessions: 3}))
	t.Cleanup(hs.Close)
	ctx := context.Background()
	open := func() (*mcp.ClientSession, error) {
		return mcpservertest.NewClient(&mcpservertest.Recorder{}).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: hs.URL + mcpserver.HTTPPath, MaxRetries: -1}, nil)
	}
	var sessions []*mcp.ClientSession
	for i := range 3 {
		cs, err := open()
		if err != nil {
			t.Fatalf("session %d of 3: %v", i+1, err)
		}
		sessions = append(sessions, cs)
	}
	t.Cleanup(func() {
		for _, cs := range sessions {
			_ = cs.Close()
		}
	})
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`
	req, _ := http.NewRequest("POST", hs.URL+mcpserver.HTTPPath, strings.NewReader(init))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), "3 MCP sessions") || !strings.Contains(string(body), "--max-sessions") {
		t.Errorf("a 4th session: %s %q; want 503 naming the limit 3 and --max-sessions", resp.Status, body)
	}
	// The sessions already open still work.
	if res := mcpservertest.Call(t, sessions[0], "skill_list", `{}`); res.IsError {
		t.Errorf("skill_list on an open session = %q", mcpservertest.Text(res))
	}
	_ = sessions[2].Close()
	sessions = sessions[:2]
	deadline := time.Now().Add(10 * time.Second)
	for {
		cs, err := open()
		if err == nil {
			sessions = append(sessions, cs)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no new session 10 s after one was closed: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestHTTPBodyTimeout: a body trickled a byte at a time is answered 408
// once BodyTimeout has passed, and the connection is closed; a body sent
// at once is served.
func TestHTTPBodyTimeout(t *testing.T) {
	srv, _ := withServer(t, mcpserver.Config{})
	hs := httptest.NewServer(srv.HTTPHandler(mcpserver.HTTPOptions{BodyTimeout: 500 * time.Millisecond}))
	t.Cleanup(hs.Close)
	conn, err := net.Dial("tcp", hs.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`
	fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: %d\r\n\r\n", mcpserver.HTTPPath, hs.Listener.Addr(), len(init))
	start := time.Now()
	stop := make(chan struct{})
	defer close(stop)
	go func() { // one byte every 200 ms, as the attack did every 2 s
		for i := 0; i < len(init); i++ {
			select {
			case <-stop:
				return
			case <-time.After(200 * time.Millisecond):
			}
			if _, err := conn.Write([]byte{init[i]}); err != nil {
				return
			}
		}
	}()
	_ = conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer to a trickled body after %s: %v", time.Since(start), err)
	}
	body, _ := io.ReadAll(resp.Body)
	took := time.Since(start)
	if resp.StatusCode != http.StatusRequestTimeout || !strings.Contains(string(body), "--body-timeout") {
		t.Errorf("trickled body: %s %q; want 408 naming --body-timeout", resp.Status, body)
	}
	if took > 5*time.Second {
		t.Errorf("a trickled body held the request %s; want it ended about 500ms after its headers", took)
	}
	t.Logf("trickled body answered %s after %s", resp.Status, took.Round(time.Millisecond))
	// A client sending at once is served.
	cs, err := mcpservertest.NewClient(&mcpservertest.Recorder{}).Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: hs.URL + mcpserver.HTTPPath}, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer cs.Close()
	if res := mcpservertest.Call(t, cs, "skill_list", `{}`); res.IsError {
		t.Errorf("skill_list = %q", mcpservertest.Text(res))
	}
}
