//go:build unix

package registry

import (
	"os"
	"syscall"
)

// openNoBlock opens path for reading without blocking on a named pipe or a
// device (O_NONBLOCK) and without following a final symlink (O_NOFOLLOW:
// callers pass resolved paths, so a link swapped in meanwhile fails).
func openNoBlock(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOFOLLOW, 0)
}
