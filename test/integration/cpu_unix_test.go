//go:build unix

package integration

import (
	"syscall"
	"time"
)

// processCPU returns the CPU time (user + system) this process has used,
// or 0 when it cannot tell.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
