package integration

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/skillbus/skillbus/internal/auth"
	"github.com/skillbus/skillbus/pkg/tool"
)

// TestAuthToolKeepAlives: under the generated permissions, a built-in
// tool provider (the tools role) may send a slow call's acknowledgement
// and keep-alives before its reply (allow_responses with no message
// limit; docs/tools.md, "Keep-alives"): a 1.5 s cmd.run called by the
// seqworker's user with keep-alives every 200 ms succeeds. With one
// message per request, the acknowledgement would use it up and the
// reply would be refused.
func TestAuthToolKeepAlives(t *testing.T) {
	e := authStart(t)
	nc, _ := e.conn(t, auth.RoleSeqworker)
	c, err := tool.NewClient(nc, tool.WithKeepAlive(200*time.Millisecond), tool.WithLostGrace(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := c.Call(ctx, "cmd.run", json.RawMessage(`{"command":"sleep","args":["1.5"]}`))
	if err != nil {
		t.Fatalf("a 1.5 s cmd.run under the generated permissions = %v; want its result", err)
	}
	var res struct {
		ExitCode int `json:"exit_code"`
	}
	if err := json.Unmarshal(out, &res); err != nil || res.ExitCode != 0 {
		t.Errorf("cmd.run result %s (%v); want exit code 0", out, err)
	}
	for _, s := range e.log.violations(0) {
		if strings.Contains(s, "_INBOX") {
			t.Errorf("the server refused a message to a reply subject: %s", s)
		}
	}
}
