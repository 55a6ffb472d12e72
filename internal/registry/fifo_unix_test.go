//go:build unix

package registry

import (
	"syscall"
	"testing"
)

// mkfifo makes a named pipe at path, or skips the test when it cannot.
func mkfifo(t *testing.T, path string) {
	t.Helper()
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		t.Skipf("cannot make a named pipe here: %v", err)
	}
}
