package natsserver

import "errors"

// ErrStoreInUse is returned by Start when another server — in this process
// or another one — holds the store directory. Two servers writing one
// JetStream store corrupt it silently, so Start refuses at once; the
// message names the directory and the holder's pid.
var ErrStoreInUse = errors.New("natsserver: store directory in use")

// LockFile is the name of the lock file Start keeps in the store directory
// while the server runs; it holds the server process's pid.
const LockFile = "skillbus.lock"

// storeInUseError is ErrStoreInUse with the directory and holder in its
// message (without the sentinel's own text repeated).
type storeInUseError string

func (e storeInUseError) Error() string        { return string(e) }
func (e storeInUseError) Is(target error) bool { return target == ErrStoreInUse }
