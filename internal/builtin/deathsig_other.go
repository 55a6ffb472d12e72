//go:build !linux

package builtin

import "os/exec"

// runTied runs c. Only Linux can have the kernel kill a command when the
// provider dies (deathsig_linux.go); elsewhere a command outlives a
// provider killed without a chance to cancel it.
func runTied(c *exec.Cmd) error { return c.Run() }
