package mcpserver_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/nats-io/nats.go"

	"github.com/skillbus/skillbus/internal/builtin"
	"github.com/skillbus/skillbus/internal/devstack"
	"github.com/skillbus/skillbus/internal/mcpserver"
	"github.com/skillbus/skillbus/internal/mcpserver/mcpservertest"
)

// withServer starts a dev stack (embedded NATS, registry on the fixture's
// definitions, seqworker, built-in tools on its root) and an MCP server
// on a connection of its own.
func withServer(t *testing.T, cfg mcpserver.Config) (*mcpserver.Server, string) {
	t.Helper()
	defs, root := mcpservertest.Fixture(t)
	ctx := context.Background()
	stack, err := devstack.Start(ctx, devstack.Config{Dir: defs, Tools: builtin.Config{Root: root}, FetchWait: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = stack.Stop(ctx)
	})
	nc, err := nats.Connect(stack.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	srv, err := mcpserver.New(nc, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	return srv, defs
}

// connect returns a session of the SDK's client on srv over transport
// ("memory" or "http").
func connect(t *testing.T, srv *mcpserver.Server, transport string, r *mcpservertest.Recorder) *mcp.ClientSession {
	t.Helper()
	ctx := context.Background()
	var ct mcp.Transport
	switch transport {
	case "memory":
		st, c := mcp.NewInMemoryTransports()
		ss, err := srv.MCP().Connect(ctx, st, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = ss.Close() })
		ct = c
	case "http":
		hs := httptest.NewServer(srv.HTTPHandler(mcpserver.HTTPOptions{}))
		t.Cleanup(hs.Close)
		ct = &mcp.StreamableClientTransport{Endpoint: hs.URL + mcpserver.HTTPPath}
	}
	cs, err := mcpservertest.NewClient(r).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatalf("connect over %s: %v", transport, err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// TestExchange runs the model-style exchange with the official SDK's
// client, in memory and over streamable HTTP.
func TestExchange(t *testing.T) {
	for _, transport := range []string{"memory", "http"} {
		t.Run(transport, func(t *testing.T) {
			srv, defs := withServer(t, mcpserver.Config{})
			r := &mcpservertest.Recorder{}
			cs := connect(t, srv, transport, r)
			mcpservertest.Exchange(t, cs, r, defs)
		})
	}
}

// TestReadOnly serves only the listing and reading tools.
func TestReadOnly(t *testing.T) {
	srv, _ := withServer(t, mcpserver.Config{ReadOnly: true, Tools: []string{"fs"}})
	cs := connect(t, srv, "memory", &mcpservertest.Recorder{})
	tools, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
		if !tl.Annotations.ReadOnlyHint {
			t.Errorf("tool %s is not marked read-only", tl.Name)
		}
	}
	slices.Sort(names)
	if !slices.Equal(names, mcpservertest.ReadOnlyTools) {
		t.Errorf("read-only tools = %v; want %v (no re-exported tools either)", names, mcpservertest.ReadOnlyTools)
	}
	if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "seq_create", Arguments: map[string]any{"name": "x"}}); err == nil {
		t.Error("seq_create answered on a read-only server")
	}
}

// TestBusTools re-exports the cluster's tools under their schemas.
func TestBusTools(t *testing.T) {
	srv, _ := withServer(t, mcpserver.Config{Tools: []string{"fs.read", "text"}})
	cs := connect(t, srv, "memory", &mcpservertest.Recorder{})
	var names []string
	for tl, err := range cs.Tools(context.Background(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(mcpservertest.ModelTools, tl.Name) {
			names = append(names, tl.Name)
			if tl.Name == "fs_read" && !strings.Contains(mustJSON(tl.InputSchema), `"path"`) {
				t.Errorf("fs_read schema %s; want the provider's schema with path", mustJSON(tl.InputSchema))
			}
		}
	}
	slices.Sort(names)
	if !slices.Equal(names, []string{"fs_read", "text_render"}) {
		t.Fatalf("re-exported tools = %v; want fs_read and text_render", names)
	}
	res := mcpservertest.Call(t, cs, "fs_read", `{"path": "README.md"}`)
	if res.IsError || !strings.Contains(mcpservertest.Text(res), "A small project.") {
		t.Errorf("fs_read = %q", mcpservertest.Text(res))
	}
	res = mcpservertest.Call(t, cs, "fs_read", `{"path": "/etc/passwd"}`)
	if !res.IsError || !strings.Contains(mcpservertest.Text(res), "403") {
		t.Errorf("fs_read outside the root = %q; want the provider's 403", mcpservertest.Text(res))
	}
}

// TestHTTPToken requires the bearer token when one is set.
func TestHTTPToken(t *testing.T) {
	srv, _ := withServer(t, mcpserver.Config{})
	const token = "0123456789abcdef0123"
	hs := httptest.NewServer(srv.HTTPHandler(mcpserver.HTTPOptions{Token: token}))
	defer hs.Close()
	ctx := context.Background()
	c := mcpservertest.NewClient(&mcpservertest.Recorder{})
	if _, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: hs.URL + mcpserver.HTTPPath, MaxRetries: -1}, nil); err == nil {
		t.Error("connected without the token")
	}
	resp, err := http.Post(hs.URL+mcpserver.HTTPPath, "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("POST without a token: %s; want 401", resp.Status)
	}
	hc := &http.Client{Transport: bearer{token}}
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: hs.URL + mcpserver.HTTPPath, HTTPClient: hc}, nil)
	if err != nil {
		t.Fatalf("connect with the token: %v", err)
	}
	defer cs.Close()
	res := mcpservertest.Call(t, cs, "skill_list", `{}`)
	if res.IsError || !strings.Contains(mcpservertest.Text(res), "handbook") {
		t.Errorf("skill_list with the token = %q", mcpservertest.Text(res))
	}
}

type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestTooLargeArguments: arguments larger than a NATS message are
// answered with the limit and what to do, not nats.go's "maximum payload
// exceeded", which a model cannot act on.
func TestTooLargeArguments(t *testing.T) {
	srv, _ := withServer(t, mcpserver.Config{})
	cs := connect(t, srv, "memory", &mcpservertest.Recorder{})
	big := strings.Repeat("a", 2<<20)
	for _, call := range []struct{ tool, args string }{
		{"skill_info", `{"name": "` + big + `"}`},
		{"seq_create", `{"name": "big", "description": "` + big + `", "groups": [{"name": "big-g", "tools": "{\"tool\":\"fs.list\"};"}]}`},
	} {
		res := mcpservertest.Call(t, cs, call.tool, call.args)
		if text := mcpservertest.Text(res); !res.IsError || !strings.Contains(text, "too large: a request is one NATS message, at most") || strings.Contains(text, "maximum payload exceeded") {
			t.Errorf("%s with 2 MiB arguments = error %v %.200q; want the limit in words", call.tool, res.IsError, text)
		}
	}
}

// TestUnknownPromptAndSectionCodes: an unknown prompt argument, section or
// resource is a JSON-RPC "invalid params" error (-32602), as MCP gives an
// unknown prompt or resource, not code 0.
func TestUnknownPromptAndSectionCodes(t *testing.T) {
	srv, _ := withServer(t, mcpserver.Config{})
	cs := connect(t, srv, "memory", &mcpservertest.Recorder{})
	ctx := context.Background()
	for what, err := range map[string]error{
		"prompt with an unknown section": func() error {
			_, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "handbook", Arguments: map[string]string{"section": "zzz"}})
			return err
		}(),
		"prompt with an unknown argument": func() error {
			_, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "handbook", Arguments: map[string]string{"colour": "red"}})
			return err
		}(),
		"resource of an unknown section": func() error {
			_, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "skill://handbook/zzz"})
			return err
		}(),
	} {
		var je *jsonrpc.Error
		if !errors.As(err, &je) || je.Code != jsonrpc.CodeInvalidParams {
			t.Errorf("%s: %v; want a JSON-RPC error -32602", what, err)
		}
	}
}
