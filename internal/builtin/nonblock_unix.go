//go:build unix

package builtin

import "syscall"

// nonBlock opens without blocking on a FIFO (a regular file ignores it).
const nonBlock = syscall.O_NONBLOCK
