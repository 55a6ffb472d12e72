//go:build linux

package builtin

import (
	"os/exec"
	"runtime"
	"syscall"
)

// runTied runs c so that the kernel kills it (SIGKILL) when the provider's
// process dies without a chance to cancel it — kill -9, an OOM kill —
// instead of leaving it running as an orphan while the resumed run starts
// it again (Linux's parent-death signal, PR_SET_PDEATHSIG). The signal is
// tied to the thread that forked the command, not the process, so the
// calling goroutine keeps its thread until the command has ended: a thread
// the Go runtime retired would otherwise kill a healthy command. The
// command's own children are not covered (only the process group's
// cancel reaches them). c must have been prepared by ownGroup.
func runTied(c *exec.Cmd) error {
	if c.SysProcAttr == nil {
		c.SysProcAttr = &syscall.SysProcAttr{}
	}
	c.SysProcAttr.Pdeathsig = syscall.SIGKILL
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	return c.Run()
}
