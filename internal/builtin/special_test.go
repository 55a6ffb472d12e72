//go:build unix

package builtin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/skillbus/skillbus/internal/natsserver"
	"github.com/skillbus/skillbus/pkg/tool"
)

// specialRoot is a project root holding a FIFO (named pipe) and a Unix
// socket beside ordinary files, and a symlink to the FIFO.
func specialRoot(t *testing.T) string {
	t.Helper()
	root, _ := project(t)
	if err := syscall.Mkfifo(filepath.Join(root, "pipe.md"), 0o644); err != nil {
		t.Skipf("cannot make a FIFO here: %v", err)
	}
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Skipf("cannot make a socket here: %v", err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	// A socket path must be short: bind with a path relative to the root.
	if err := syscall.Bind(fd, &syscall.SockaddrUnix{Name: filepath.Join(root, "s.sock")}); err != nil {
		t.Skipf("cannot bind a Unix socket here: %v", err)
	}
	if err := syscall.Symlink("pipe.md", filepath.Join(root, "pipe-link.md")); err != nil {
		t.Fatal(err)
	}
	return root
}

// TestSpecialFilesAreRefused: fs.read of a FIFO, a socket or a symlink to
// a FIFO answers code 400 at once instead of blocking, and the walks
// (grep, lines) pass over them.
func TestSpecialFilesAreRefused(t *testing.T) {
	root := specialRoot(t)
	p := newProvider(t, Config{Root: root})
	for _, tc := range []struct{ path, what string }{
		{"pipe.md", "named pipe"},
		{"pipe-link.md", "named pipe"},
		{"s.sock", "socket"},
	} {
		done := make(chan struct{})
		go func() {
			defer close(done)
			_, code, err := call(t, p, "fs.read", fmt.Sprintf(`{"path":%q}`, tc.path))
			if code != "400" || !strings.Contains(fmt.Sprint(err), tc.what) {
				t.Errorf("fs.read(%s) = code %q, %v; want 400 naming a %s", tc.path, code, err, tc.what)
			}
		}()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatalf("fs.read(%s) still blocked after 5 s", tc.path)
		}
	}
	for _, args := range []string{`{"pattern":"TODO"}`, `{"pattern":"x","path":"pipe.md"}`} {
		done := make(chan struct{})
		go func() {
			defer close(done)
			call(t, p, "fs.grep", args)
			call(t, p, "fs.lines", `{}`)
		}()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatalf("fs.grep(%s) / fs.lines over a root with a FIFO still blocked after 5 s", args)
		}
	}
}

// TestFIFOCallsDoNotStarveReads sends 64 concurrent fs.read calls of a
// FIFO (the provider's default concurrency) over NATS together with
// ordinary reads: every call is answered, the ordinary ones correctly.
func TestFIFOCallsDoNotStarveReads(t *testing.T) {
	root := specialRoot(t)
	p := newProvider(t, Config{Root: root})
	s := natsserver.StartTB(t, natsserver.Options{})
	srv, err := tool.Serve(natsserver.ConnectTB(t, s), tool.ServerConfig{Name: "fifo-test"}, p.Tools()...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Stop(context.Background()) })
	c, _ := tool.NewClient(natsserver.ConnectTB(t, s))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, 200)
	for i := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := c.Call(ctx, "fs.read", json.RawMessage(`{"path":"pipe.md"}`))
			var te *tool.Error
			if !errors.As(err, &te) || te.Code != "400" {
				errs <- fmt.Errorf("FIFO read %d = %v; want code 400", i, err)
			}
		}()
	}
	for i := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := c.Call(ctx, "fs.read", json.RawMessage(`{"path":"README.md"}`))
			if err != nil || !strings.Contains(string(res), "A demo project") {
				errs <- fmt.Errorf("ordinary read %d beside 64 FIFO reads = %s, %v", i, res, err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
