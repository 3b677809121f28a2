//go:build !linux

package proctreetest

import "time"

// WaitExit needs a pidfd's exit notice, which only Linux gives; elsewhere
// a test that waits for a process is not run (the project tests on Linux).
func WaitExit(pid int, bound time.Duration) bool {
	panic("proctreetest: WaitExit needs Linux pidfds")
}

// WaitFile needs inotify, which only Linux has.
func WaitFile(path string, bound time.Duration, done func([]byte) bool) bool {
	panic("proctreetest: WaitFile needs Linux inotify")
}

// WaitDir needs inotify, which only Linux has.
func WaitDir(dir string, bound time.Duration, done func() bool) bool {
	panic("proctreetest: WaitDir needs Linux inotify")
}
