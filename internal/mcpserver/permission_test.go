package mcpserver_test

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/skillbus/skillbus/internal/mcpserver"
	"github.com/skillbus/skillbus/internal/mcpserver/mcpservertest"
	"github.com/skillbus/skillbus/internal/registry"
	"github.com/skillbus/skillbus/pkg/events"
)

// TestPermissions runs the MCP server as a NATS user who may read the
// registry but not write to it: reading works, and seq_create is refused
// at once (not at the request timeout) with a message naming the subject.
func TestPermissions(t *testing.T) {
	defs, _ := mcpservertest.Fixture(t)
	opts := &server.Options{Host: "127.0.0.1", Port: -1, NoSigs: true, NoLog: true, JetStream: true, StoreDir: t.TempDir(),
		Users: []*server.User{
			{Username: "services", Password: "s"},
			{Username: "reader", Password: "r", Permissions: &server.Permissions{
				Publish: &server.SubjectPermission{Allow: []string{
					events.RegistrySkillListSubject, events.RegistrySkillGetSubject, events.RegistrySkillInfoSubject,
					events.RegistrySeqListSubject, events.RegistrySeqGetSubject, events.SeqStatusSubject,
				}},
				Subscribe: &server.SubjectPermission{Allow: []string{"_INBOX.>", events.SubjectRegistryEventsAll}},
			}},
		}}
	s, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	s.Start()
	t.Cleanup(s.Shutdown)
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("server not ready")
	}
	snc, err := nats.Connect(s.ClientURL(), nats.UserInfo("services", "s"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(snc.Close)
	reg, err := registry.New(snc, registry.Config{Dir: defs, Resync: -1, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := reg.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = reg.Stop(context.Background()) })

	nc, err := nats.Connect(s.ClientURL(), nats.UserInfo("reader", "r"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	srv, err := mcpserver.New(nc, mcpserver.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	st, ct := mcp.NewInMemoryTransports()
	if _, err := srv.MCP().Connect(ctx, st, nil); err != nil {
		t.Fatal(err)
	}
	cs, err := mcpservertest.NewClient(&mcpservertest.Recorder{}).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()

	res := mcpservertest.Call(t, cs, "skill_info", `{"name": "handbook", "section": "rollback"}`)
	if res.IsError || !strings.Contains(mcpservertest.Text(res), "Revert") {
		t.Errorf("skill_info as reader = %q; want the section", mcpservertest.Text(res))
	}
	start := time.Now()
	res = mcpservertest.Call(t, cs, "seq_create", mcpservertest.ModelSequence)
	took := time.Since(start)
	want := `permission denied: the NATS credentials of this MCP server may not publish on "` + events.RegistrySeqCreateSubject + `"`
	if !res.IsError || !strings.Contains(mcpservertest.Text(res), want) {
		t.Errorf("seq_create as reader = %q; want %q", mcpservertest.Text(res), want)
	}
	if took > 10*time.Second {
		t.Errorf("seq_create as reader took %s; want the refusal at once, not the 15 s request timeout", took)
	}
}
