//go:build unix

package builtin

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSymlinkLoop: a path through a symlink loop under the tool root (a →
// b → a, a link to itself, a directory link to a loop) is the caller's
// problem, code 400 naming the loop — it was a 500 with the system's
// "too many levels of symbolic links" — and the walks over a root holding
// such links still answer (docs/tools.md, "Built-in tools: limits").
func TestSymlinkLoop(t *testing.T) {
	root, _ := project(t)
	for link, target := range map[string]string{"a": "b", "b": "a", "self": "self", "loopdir": "a"} {
		if err := os.Symlink(target, filepath.Join(root, link)); err != nil {
			t.Fatal(err)
		}
	}
	p := newProvider(t, Config{Root: root})
	for _, tc := range []struct{ tool, args string }{
		{"fs.read", `{"path":"a"}`},
		{"fs.read", `{"path":"self"}`},
		{"fs.read", `{"path":"loopdir/x.md"}`},
		{"fs.stat", `{"path":"b"}`},
		{"fs.list", `{"path":"loopdir"}`},
		{"fs.grep", `{"pattern":"x","path":"a"}`},
		{"fs.lines", `{"path":"self"}`},
	} {
		_, code, err := call(t, p, tc.tool, tc.args)
		if code != "400" || !strings.Contains(fmt.Sprint(err), "symlink loop") {
			t.Errorf("%s %s = code %q, %v; want 400 naming a symlink loop", tc.tool, tc.args, code, err)
		}
	}
	for _, tc := range []struct{ tool, args string }{
		{"fs.list", `{}`},
		{"fs.glob", `{"pattern":"**"}`},
		{"fs.grep", `{"pattern":"TODO"}`},
		{"fs.lines", `{}`},
	} {
		if _, code, err := call(t, p, tc.tool, tc.args); err != nil {
			t.Errorf("%s %s over a root holding symlink loops = code %q, %v; want an answer", tc.tool, tc.args, code, err)
		}
	}
}
