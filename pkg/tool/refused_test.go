package tool_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/skillbus/skillbus/pkg/tool"
)

// TestServeRefused: a provider whose user may not subscribe to its tools'
// subjects (a wrong creds file, a role for another prefix) is told so by
// Serve — ErrRefused naming the subject, which also wraps
// nats.ErrPermissionViolation — instead of returning a server that looks
// fine and receives nothing (before, the server's refusal was only a
// warning in the log). A user allowed the subject serves as usual.
func TestServeRefused(t *testing.T) {
	opts := &server.Options{Host: "127.0.0.1", Port: -1, NoSigs: true, NoLog: true,
		Users: []*server.User{
			{Username: "web", Password: "w", Permissions: &server.Permissions{
				Subscribe: &server.SubjectPermission{Allow: []string{"_INBOX.>", "$SRV.>", "tool.web.>"}},
			}},
			{Username: "nosrv", Password: "n", Permissions: &server.Permissions{
				Subscribe: &server.SubjectPermission{Allow: []string{"_INBOX.>", "tool.>"}},
			}},
		}}
	s, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	s.Start()
	t.Cleanup(s.Shutdown)
	if !s.ReadyForConnections(time.Minute) {
		t.Fatal("nats-server not ready")
	}
	connect := func(user, pw string) *nats.Conn {
		nc, err := nats.Connect(s.ClientURL(), nats.UserInfo(user, pw), nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {}))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		return nc
	}
	echo := func(name string) tool.Tool {
		return tool.Tool{Name: name, Func: func(_ context.Context, args json.RawMessage) (any, error) { return args, nil }}
	}

	for _, tc := range []struct {
		user, pw string
		tools    []tool.Tool
		refused  string
	}{
		{"web", "w", []tool.Tool{echo("web.fetch"), echo("fs.read")}, `tool.fs.read`},
		{"nosrv", "n", []tool.Tool{echo("web.fetch")}, `$SRV.`},
	} {
		srv, err := tool.Serve(connect(tc.user, tc.pw), tool.ServerConfig{Name: "refused"}, tc.tools...)
		if err == nil {
			_ = srv.Stop(context.Background())
			t.Errorf("user %s: Serve = a server; want ErrRefused naming %s", tc.user, tc.refused)
			continue
		}
		if !errors.Is(err, tool.ErrRefused) || !errors.Is(err, nats.ErrPermissionViolation) || !strings.Contains(err.Error(), tc.refused) {
			t.Errorf("user %s: Serve = %v; want ErrRefused (and nats.ErrPermissionViolation) naming %s", tc.user, err, tc.refused)
		}
	}

	// Allowed: it serves, and a call is answered.
	srv, err := tool.Serve(connect("web", "w"), tool.ServerConfig{Name: "allowed"}, echo("web.fetch"))
	if err != nil {
		t.Fatalf("Serve with the subjects allowed: %v", err)
	}
	defer srv.Stop(context.Background())
	client, err := tool.NewClient(connect("nosrv", "n"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := client.Call(ctx, "web.fetch", json.RawMessage(`{"u":1}`)); err != nil {
		t.Errorf("a call to the served tool: %v", err)
	}
}
