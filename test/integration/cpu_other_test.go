//go:build !unix

package integration

import "time"

// processCPU is unknown here: the CPU metrics are left out.
func processCPU() time.Duration { return 0 }
