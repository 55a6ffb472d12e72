//go:build !unix

package registry

import (
	"fmt"
	"os"
)

// openNoBlock opens path for reading after checking that it is a regular
// file (systems without O_NONBLOCK: the check comes before the open).
func openNoBlock(path string) (*os.File, error) {
	st, err := os.Lstat(path)
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%w: %s", ErrNotRegular, describeMode(st.Mode()))
	}
	return os.Open(path)
}
