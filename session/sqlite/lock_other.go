//go:build !unix

package sqlite

import "os"

// holdLock makes no lock where there is no flock: the lease (the
// heartbeat) alone tells that the store is alive.
func holdLock(string) (*os.File, error) { return nil, nil }

// probeLock knows nothing where there is no flock.
func probeLock(string) lockState { return lockUnknown }

// bootID is unknown here.
func bootID() string { return "" }
