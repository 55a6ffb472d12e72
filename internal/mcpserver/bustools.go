package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillbus/skillbus/pkg/events"
	"github.com/skillbus/skillbus/pkg/tool"
)

// busTools re-exports the cluster's tool.* tools whose names match
// Config.Tools, each under an MCP name made of its own ("fs.read" →
// "fs_read": MCP clients accept letters, digits, _ and - in tool names)
// with the input schema its provider publishes (NATS micro endpoint
// metadata, as `skillbus tools --json` shows it).
type busTools struct {
	// mu guards served.
	mu sync.Mutex
	// served maps the MCP name to the tool's fingerprint (name, schema
	// and description) as registered.
	served map[string]string
}

// start discovers the tools now and every Config.ToolsRefresh.
func (b *busTools) start(ctx context.Context, s *Server, wg *sync.WaitGroup) {
	b.served = map[string]string{}
	b.refresh(ctx, s)
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(s.cfg.ToolsRefresh)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				b.refresh(ctx, s)
			}
		}
	}()
}

// mcpToolName returns the MCP name of a skillbus tool: characters other
// than letters, digits, _ and - become _.
func mcpToolName(name string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-':
			return r
		}
		return '_'
	}, name)
}

// wanted reports whether tool name is covered by one of the prefixes.
func wanted(name string, prefixes []string) bool {
	for _, p := range prefixes {
		if name == p || strings.HasPrefix(name, p+".") {
			return true
		}
	}
	return false
}

// refresh discovers the tools and registers, replaces or removes them.
// A discovery that fails keeps the tools served so far.
func (b *busTools) refresh(ctx context.Context, s *Server) {
	eps, err := tool.Discover(ctx, s.nc, 500*time.Millisecond)
	if err != nil {
		s.log.Warn("cannot discover the tools to re-export", "err", err)
		return
	}
	found := map[string]tool.Endpoint{}
	for _, ep := range eps {
		if !wanted(ep.Tool, s.cfg.Tools) {
			continue
		}
		name := mcpToolName(ep.Tool)
		if s.own[name] || len(name) > 64 {
			continue
		}
		if prev, ok := found[name]; ok && prev.Tool != ep.Tool {
			s.log.Warn("two tools have the same MCP name; re-exporting the first", "mcp_name", name, "kept", prev.Tool, "skipped", ep.Tool)
			continue
		}
		if _, ok := found[name]; !ok {
			found[name] = ep
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	var gone []string
	for name := range b.served {
		if _, ok := found[name]; !ok {
			gone = append(gone, name)
			delete(b.served, name)
		}
	}
	if len(gone) > 0 {
		s.mcp.RemoveTools(gone...)
	}
	for _, name := range sortedKeys(found) {
		ep := found[name]
		fp := ep.Tool + "\x00" + ep.Description + "\x00" + string(ep.Schema)
		if b.served[name] == fp {
			continue
		}
		b.served[name] = fp
		s.mcp.AddTool(busTool(name, ep), s.callBusTool(ep.Tool))
	}
}

// busTool describes a re-exported tool: its provider's description and
// input schema (an object schema accepting anything when it publishes
// none or one that is not an object).
func busTool(name string, ep tool.Endpoint) *mcp.Tool {
	schema := json.RawMessage(`{"type":"object"}`)
	var head struct {
		Type string `json:"type"`
	}
	if len(ep.Schema) > 0 && json.Unmarshal(ep.Schema, &head) == nil && head.Type == "object" {
		schema = ep.Schema
	}
	desc := ep.Description
	if desc == "" {
		desc = "The skillbus tool " + ep.Tool + "."
	}
	desc += fmt.Sprintf("\n\n(The skillbus tool %s, served by %s on NATS; a sequence calls it as {\"tool\":%q}.)", ep.Tool, ep.Provider, ep.Tool)
	f := false
	return &mcp.Tool{Name: name, Title: ep.Tool, Description: desc, InputSchema: schema,
		Annotations: &mcp.ToolAnnotations{OpenWorldHint: &f}}
}

// callBusTool calls the skillbus tool name with the call's arguments and
// returns its result as text (a JSON string as its text, any other value
// as JSON), with the value as structured content when it is an object.
func (s *Server) callBusTool(name string) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		args := req.Params.Arguments
		if len(args) == 0 || string(args) == "null" {
			args = json.RawMessage("{}")
		}
		ctx, done := s.perm.watch(ctx, events.ToolPrefix+name)
		defer done()
		out, err := s.tools.Call(ctx, name, args)
		if err != nil {
			if cause := context.Cause(ctx); cause != nil && strings.Contains(cause.Error(), "permission denied") {
				err = cause
			}
			return errorResult(s.describeError(mcpToolName(name), err)), nil
		}
		res := &mcp.CallToolResult{}
		var text string
		if json.Unmarshal(out, &text) != nil {
			text = string(out)
		}
		if len(text) > MaxOneOutputBytes {
			text = strings.ToValidUTF8(text[:MaxOneOutputBytes], "") + fmt.Sprintf("\n[cut: the result is %d bytes]", len(out))
		}
		res.Content = []mcp.Content{&mcp.TextContent{Text: text}}
		var obj map[string]any
		if json.Unmarshal(out, &obj) == nil && len(out) <= MaxOneOutputBytes {
			res.StructuredContent = json.RawMessage(out)
		}
		return res, nil
	}
}
