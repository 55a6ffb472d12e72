package cli

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/skillbus/skillbus/internal/auth"
	"github.com/skillbus/skillbus/internal/natsconn"
)

// TestAuthConsoleCallsTools: `skillbus auth --console-calls-tools` gives
// the console role tool.> (docs/security.md), a later run without the
// flag keeps the choice, and --console-calls-tools=false takes it back;
// the report says which it is.
func TestAuthConsoleCallsTools(t *testing.T) {
	dir := t.TempDir()
	creds := filepath.Join(dir, "creds", auth.RoleConsole+".creds")
	mayCall := func(what string, want bool) {
		t.Helper()
		p, err := natsconn.PermissionsOf(creds)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if p.Role != auth.RoleConsole || p.MayPublish("tool.fs.read") != want || !p.MayPublish("skillbus.seq.run") {
			t.Errorf("%s: the console role (%q) may publish tool.fs.read: %v; want %v (and skillbus.seq.run always)", what, p.Role, !want, want)
		}
	}
	for _, step := range []struct {
		args   []string
		want   bool
		report string
	}{
		{nil, false, "may not call tools directly; --console-calls-tools lets it"},
		{[]string{"--console-calls-tools"}, true, "may call tools directly"},
		{nil, true, "may call tools directly"},
		{[]string{"--console-calls-tools=false"}, false, "may not call tools directly"},
	} {
		what := "auth " + strings.Join(step.args, " ")
		code, out, errb := runMain(t, append([]string{"auth", "--dir", dir}, step.args...)...)
		if code != ExitOK {
			t.Fatalf("%s = %d\n%s", what, code, errb)
		}
		if !strings.Contains(out, "console: skillbus ui --creds "+creds) || !strings.Contains(out, step.report) {
			t.Errorf("%s printed:\n%s\nwant the console's creds and %q", what, out, step.report)
		}
		mayCall(what, step.want)
	}
}
