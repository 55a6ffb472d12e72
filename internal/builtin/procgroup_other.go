//go:build !unix

package builtin

import "os/exec"

// ownGroup leaves c as it is where process groups are not available: its
// cancellation kills the command itself (exec.CommandContext's default).
func ownGroup(c *exec.Cmd) {}
