//go:build !unix

package sections

import "time"

// processCPU cannot tell the CPU time on this system.
func processCPU() time.Duration { return 0 }
