//go:build unix

package builtin

import (
	"os/exec"
	"syscall"
)

// ownGroup runs c in a process group of its own and makes its
// cancellation (the call's context ending: its deadline, the caller's
// cancel, the provider stopping) kill the whole group, so that children
// the command started (a shell's pipeline, `go test`'s test binaries) end
// with it.
func ownGroup(c *exec.Cmd) {
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	c.Cancel = func() error {
		if c.Process == nil {
			return nil
		}
		// The group's id is the child's pid (Setpgid with Pgid 0).
		if err := syscall.Kill(-c.Process.Pid, syscall.SIGKILL); err != nil {
			return c.Process.Kill()
		}
		return nil
	}
}
