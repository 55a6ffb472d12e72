package mcpserver_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/skillbus/skillbus/internal/mcpserver"
)

// TestStdioSurvivesBadLines drives the stdio transport as a client
// process would, line by line: a line that is not JSON, a cut-off message
// (whose newline must end it), JSON that is not JSON-RPC, a blank line and
// an over-long line are each answered with a JSON-RPC error (-32700 or
// -32600) and skipped; the session goes on and answers the next request.
// (With the SDK's transport alone, the first bad line ended the session
// and the process.)
func TestStdioSurvivesBadLines(t *testing.T) {
	srv, _ := withServer(t, mcpserver.Config{})
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.MCP().Run(ctx, mcpserver.StdioTransport(inR, outW)) }()
	t.Cleanup(func() { cancel(); inW.Close(); outR.Close() })

	lines := make(chan map[string]any, 16)
	go func() {
		sc := bufio.NewScanner(outR)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var m map[string]any
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				t.Errorf("stdout line is not JSON: %q", sc.Text())
				continue
			}
			lines <- m
		}
	}()
	send := func(s string) {
		t.Helper()
		if _, err := io.WriteString(inW, s+"\n"); err != nil {
			t.Fatalf("write %q: %v", s, err)
		}
	}
	next := func(what string) map[string]any {
		t.Helper()
		select {
		case m := <-lines:
			return m
		case err := <-done:
			t.Fatalf("%s: the session ended: %v", what, err)
		case <-time.After(20 * time.Second):
			t.Fatalf("%s: no reply within 20 s", what)
		}
		return nil
	}
	wantError := func(what string, code float64, id any) {
		t.Helper()
		m := next(what)
		e, _ := m["error"].(map[string]any)
		if e == nil || e["code"] != code || m["id"] != id || !strings.Contains(e["message"].(string), "skipped") {
			t.Errorf("%s: reply %v; want error %v with id %v saying the line was skipped", what, m, code, id)
		}
	}

	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	if m := next("initialize"); m["result"] == nil {
		t.Fatalf("initialize: %v", m)
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)

	send(`garbage`)
	wantError("a line that is not JSON", -32700, nil)
	send(`{"jsonrpc":"2.0","id":99,"method":"tools/call","params":`)
	wantError("a cut-off message", -32700, nil)
	send(`{"hello":"world","id":7}`)
	wantError("JSON that is not JSON-RPC", -32600, float64(7))
	send(`[1,2,3]`)
	wantError("a JSON array", -32600, nil)
	send(`[{"jsonrpc":"2.0","id":3,"method":"ping"}]`)
	wantError("a batch", -32600, nil)
	send(``)
	send(`{"jsonrpc":"2.0","id":8,"method":"x","params":"` + strings.Repeat("a", mcpserver.MaxStdioLine) + `"}`)
	wantError("a line over the limit", -32700, nil)

	send(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	m := next("tools/list after the bad lines")
	if m["id"] != float64(2) || m["result"] == nil || !strings.Contains(mustJSON(m["result"]), "seq_run") {
		t.Errorf("tools/list after the bad lines = %v; want the tool list", m)
	}

	// The end of stdin ends the session cleanly.
	inW.Close()
	select {
	case err := <-done:
		if err != nil && !strings.Contains(err.Error(), "EOF") && !strings.Contains(err.Error(), "closed") {
			t.Errorf("Run after stdin closed: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Error("the session did not end when stdin closed")
	}
}
