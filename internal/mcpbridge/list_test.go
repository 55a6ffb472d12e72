package mcpbridge

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/micro"

	"github.com/skillbus/skillbus/internal/natsserver"
)

// longDescription is a tool description of several paragraphs, over
// 2,000 characters, with non-ASCII text near the end.
var longDescription = strings.Repeat("Search the issue tracker for issues matching a query.\n\n", 30) +
	"Returns at most 50 issues, newest first — ünïcödé at the end."

// TestBridgeRepeatedCursor: an MCP server whose tools/list gives the
// same nextCursor on every page makes the bridge's start fail at once
// with an error naming the repeated cursor, instead of paging for ever.
func TestBridgeRepeatedCursor(t *testing.T) {
	srv := natsserver.StartTB(t, natsserver.Options{})
	nc := natsserver.ConnectTB(t, srv)
	cfg := Config{Prefix: "loop", Command: os.Args[0], Args: []string{"-test.run=^$"},
		Env: append(os.Environ(), envServer+"=1", envList+"=loop"), NoRestart: true}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	start := time.Now()
	b, err := Start(ctx, nc, cfg)
	if err == nil {
		b.Stop(context.Background())
		t.Fatal("Start succeeded with a server whose tools/list repeats its nextCursor")
	}
	took := time.Since(start)
	if !strings.Contains(err.Error(), `nextCursor "page-again" that page 1 gave already`) || !strings.Contains(err.Error(), "page 2") {
		t.Errorf("Start error = %v; want it to name the repeated cursor and the pages", err)
	}
	if ctx.Err() != nil {
		t.Errorf("Start ended with the context (%v after %s), not at the repeated cursor", ctx.Err(), took)
	}
	t.Logf("refused after %s: %v", took, err)
}

// TestBridgeLongDescription: a description of 2,000+ characters over
// several lines is published whole, byte for byte, and a tools/list of
// several pages is read to its end.
func TestBridgeLongDescription(t *testing.T) {
	b, nc, _ := startBridge(t, Config{Prefix: "long"}, envList+"=long")
	if got := strings.Join(b.Tools(), " "); got != "long.count long.echo long.exit long.fail long.grow long.long long.shout_loud" {
		t.Fatalf("Tools() = %s; want the 7 tools of 4 pages", got)
	}
	msg, err := nc.Request("$SRV.INFO.mcp-long", nil, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var info micro.Info
	if err := json.Unmarshal(msg.Data, &info); err != nil {
		t.Fatal(err)
	}
	for _, ep := range info.Endpoints {
		if ep.Subject == "tool.long.long" {
			if got := ep.Metadata["description"]; got != longDescription {
				t.Errorf("description of tool.long.long = %d bytes %q…; want the server's %d bytes whole", len(got), got[:min(len(got), 60)], len(longDescription))
			}
			return
		}
	}
	t.Fatalf("$SRV.INFO.mcp-long has no tool.long.long: %+v", info.Endpoints)
}
