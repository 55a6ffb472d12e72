//go:build !unix

package tool_test

import "time"

// processCPU cannot tell the CPU time on this system.
func processCPU() time.Duration { return 0 }
