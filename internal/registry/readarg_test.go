package registry

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestReadArg: a file named on the command line is read by the tree's
// rules — through a symlink only when the link leads inside the directory
// the path names or the current directory; never a link to /etc/passwd or
// a device; never a FIFO; never more than the limit.
func TestReadArg(t *testing.T) {
	dir := t.TempDir()
	other := t.TempDir()
	writeTree(t, dir, map[string]string{"a.seq.yaml": "name: a\n", "sub/b.seq.yaml": "name: b\n"})
	writeTree(t, other, map[string]string{"c.seq.yaml": "name: c\n", "big.seq.yaml": strings.Repeat("x", 2000)})
	link := func(target, name string) string {
		t.Helper()
		p := filepath.Join(dir, name)
		must(t, os.Symlink(target, p))
		return p
	}
	inDir := link("a.seq.yaml", "alias.seq.yaml")
	inSub := link(filepath.Join(dir, "sub/b.seq.yaml"), "sub-alias.seq.yaml")
	passwd := link("/etc/passwd", "link.seq.yaml")
	outside := link(filepath.Join(other, "c.seq.yaml"), "other.seq.yaml")
	zero := link("/dev/zero", "zero.seq.yaml")
	up := filepath.Join(dir, "sub", "up.seq.yaml")
	must(t, os.Symlink("../a.seq.yaml", up)) // leaves sub/, the directory named
	fifo := filepath.Join(dir, "fifo.seq.yaml")
	mkfifo(t, fifo)

	read := func(path string) (string, error) {
		t.Helper()
		type res struct {
			data []byte
			err  error
		}
		done := make(chan res, 1)
		go func() { d, _, _, err := ReadArg(path, 1000); done <- res{d, err} }()
		select {
		case r := <-done:
			return string(r.data), r.err
		case <-time.After(10 * time.Second):
			t.Fatalf("ReadArg(%s) blocks", path)
			return "", nil
		}
	}
	t.Chdir(t.TempDir()) // a current directory that holds none of them
	for path, want := range map[string]string{
		filepath.Join(dir, "a.seq.yaml"):   "name: a\n",
		inDir:                              "name: a\n",
		inSub:                              "name: b\n",
		filepath.Join(other, "c.seq.yaml"): "name: c\n", // a path named directly is read: the user named it
	} {
		if got, err := read(path); err != nil || got != want {
			t.Errorf("ReadArg(%s) = %q, %v; want %q", path, got, err, want)
		}
	}
	for path, want := range map[string]error{passwd: ErrOutsideTree, outside: ErrOutsideTree, zero: ErrOutsideTree, up: ErrOutsideTree, fifo: ErrNotRegular, filepath.Join(other, "big.seq.yaml"): ErrTooLarge} {
		got, err := read(path)
		if !errors.Is(err, want) || got != "" {
			t.Errorf("ReadArg(%s) = %q, %v; want %v", path, got, err, want)
		}
	}
	if _, err := read(filepath.Join(dir, "nope.seq.yaml")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("ReadArg(missing) = %v; want not-exist", err)
	}
	_, err := read(passwd)
	if msg := refusalMessage(err); !strings.HasPrefix(msg, "not followed: a symlink to /etc/passwd, outside the directory "+dir) {
		t.Errorf("message = %q", msg)
	}
	// The current directory counts as inside: from dir, sub/up.seq.yaml
	// (a link to dir/a.seq.yaml) is read.
	t.Chdir(dir)
	if got, err := read(filepath.Join("sub", "up.seq.yaml")); err != nil || got != "name: a\n" {
		t.Errorf("ReadArg(sub/up.seq.yaml) from the tree = %q, %v; want a's content", got, err)
	}
	if got, err := read("link.seq.yaml"); !errors.Is(err, ErrOutsideTree) || got != "" {
		t.Errorf("ReadArg(link.seq.yaml) from the tree = %q, %v; want ErrOutsideTree", got, err)
	}
}
