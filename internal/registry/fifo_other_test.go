//go:build !unix

package registry

import "testing"

// mkfifo skips the test: named pipes need a Unix system.
func mkfifo(t *testing.T, path string) {
	t.Helper()
	t.Skip("named pipes need a Unix system")
}
