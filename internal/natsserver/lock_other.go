//go:build !unix

package natsserver

import "os"

// lockStore is a no-op where flock(2) is not available: nothing stops two
// servers from sharing a store there.
func lockStore(dir string) (*os.File, error) { return nil, nil }
