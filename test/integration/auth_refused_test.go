package integration

import (
	"strings"
	"testing"
	"time"

	"github.com/skillbus/skillbus/internal/auth"
)

// TestToolsServeRefusedExits: `skillbus tools serve` with the creds of a
// tool provider role for another prefix (the "web" role may answer only
// tool.web.>) cannot subscribe to its tools: it exits 1 at once with a
// message naming a refused subject and the creds file, instead of logging
// warnings and serving nothing while its readiness said ready.
func TestToolsServeRefusedExits(t *testing.T) {
	e := authStart(t)
	creds := e.setup.CredsFile(auth.ToolRole("web"))
	start := time.Now()
	code, out, errOut := cliRun(t, "tools", "serve", "--root", e.root, "--prefix", "files", "--creds", creds, "--health-addr", "127.0.0.1:0")
	if code != 1 {
		t.Fatalf("tools serve --prefix files with the web role's creds = exit %d; want 1\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	for _, want := range []string{`tool.files.`, creds, "role tools-web", "may not subscribe", "docs/security.md"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr does not name %q:\n%s", want, errOut)
		}
	}
	if strings.Contains(errOut, "msg=ready") || strings.Contains(out, "serving ") {
		t.Errorf("it said it was serving:\nstdout: %s\nstderr: %s", out, errOut)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("it took %v to exit", d)
	}
}
