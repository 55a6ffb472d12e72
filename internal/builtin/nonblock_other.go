//go:build !unix

package builtin

// nonBlock is 0 where opens have no non-blocking mode.
const nonBlock = 0
