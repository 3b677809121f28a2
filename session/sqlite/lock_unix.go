//go:build unix

package sqlite

import (
	"errors"
	"os"
	"strings"
	"syscall"
)

// holdLock creates the file at path and takes an exclusive flock on it,
// held as long as the returned file stays open: the kernel releases it
// when the process ends, however it ends.
func holdLock(path string) (*os.File, error) {
	// Readable by all (it is empty), so that the stores of other users
	// sharing the database can look at it.
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// probeLock tells whether the lock file at path is held. A flock belongs
// to the open file it was taken on, so a lock held by another store of
// this same process is seen as held too.
func probeLock(path string) lockState {
	f, err := os.Open(path) // flock needs no write access
	if err != nil {
		return lockUnknown // no file: nothing to tell
	}
	defer f.Close() // releases the lock if this call took it
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	switch {
	case err == nil:
		return lockFree
	case errors.Is(err, syscall.EWOULDBLOCK):
		return lockHeld
	}
	return lockUnknown
}

// bootID names the current boot of this machine, "" when unknown.
func bootID() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}
