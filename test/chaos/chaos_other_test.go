//go:build !linux

package chaos

import "testing"

// TestChaos needs Linux (process groups, network namespaces).
func TestChaos(t *testing.T) {
	t.Skip("the chaos suite runs on Linux only (it uses network namespaces and Linux process settings)")
}
