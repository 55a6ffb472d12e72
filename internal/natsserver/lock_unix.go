//go:build unix

package natsserver

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// lockStore takes an exclusive flock(2) on dir/LockFile (creating dir and
// the file), without waiting, and writes this process's pid into it. The
// kernel drops the lock when the file is closed or the process dies, so a
// crashed server never leaves the store locked. Errors: ErrStoreInUse with
// the holder's pid, or the file system's error.
func lockStore(dir string) (*os.File, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("natsserver: store directory: %w", err)
	}
	name := filepath.Join(dir, LockFile)
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("natsserver: store lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		defer f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			holder := "unknown pid"
			if b, rerr := os.ReadFile(name); rerr == nil {
				if pid, perr := strconv.Atoi(strings.TrimSpace(string(b))); perr == nil {
					holder = "pid " + strconv.Itoa(pid)
				}
			}
			return nil, storeInUseError(fmt.Sprintf("store %s is in use by another process (%s): stop it or use another store directory (--data for skillbus dev and run)", dir, holder))
		}
		return nil, fmt.Errorf("natsserver: lock store %s: %w", dir, err)
	}
	if err = f.Truncate(0); err == nil {
		_, err = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("natsserver: write store lock %s: %w", name, err)
	}
	return f, nil
}
