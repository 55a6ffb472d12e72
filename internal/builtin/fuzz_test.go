package builtin

import (
	"io/fs"
	"strings"
	"testing"
)

// FuzzLocal checks the path rule of every file tool: a path is either
// refused or becomes a clean relative path that cannot leave the root.
func FuzzLocal(f *testing.F) {
	for _, s := range []string{"", ".", "a/b", "../x", "a/../../x", "/etc/passwd", `\\server\share`, "C:/x", "a//b/./c/", "..", "a/..", "./**/*.go", "x\x00y"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		got, err := local(p)
		if err != nil {
			return
		}
		if !fs.ValidPath(got) {
			t.Fatalf("local(%q) = %q; not a valid relative path", p, got)
		}
		if got == ".." || strings.HasPrefix(got, "../") || strings.HasPrefix(got, "/") {
			t.Fatalf("local(%q) = %q; leaves the root", p, got)
		}
	})
}
