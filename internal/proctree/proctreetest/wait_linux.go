package proctreetest

import (
	"errors"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// WaitExit blocks until process pid has exited (a zombie not yet reaped
// counts) and reports whether it did within bound. The kernel tells a
// pidfd's reader when its process exits, so this waits for that notice,
// not for a poll to see it; bound only fails a test that would hang.
// A pid with no process (ESRCH) has exited.
func WaitExit(pid int, bound time.Duration) bool {
	fd, err := unix.PidfdOpen(pid, 0)
	if errors.Is(err, unix.ESRCH) {
		return true
	}
	if err != nil {
		panic("proctreetest: pidfd_open: " + err.Error())
	}
	defer unix.Close(fd)
	return waitReadable(fd, bound)
}

// WaitFile blocks until done returns true for the contents of the file at
// path (missing reads as empty) and reports whether it did within bound.
// done is asked once at first and again at each notice (inotify) that a
// writer closed the file or it was created or moved in: no reading in a
// loop of sleeps.
func WaitFile(path string, bound time.Duration, done func([]byte) bool) bool {
	return WaitDir(filepath.Dir(path), bound, func() bool {
		b, _ := os.ReadFile(path)
		return done(b)
	})
}

// WaitDir blocks until done returns true and reports whether it did within
// bound. done is asked once at first and again at each notice (inotify)
// that a file in dir was written, closed after writing, created or moved
// in: for state another process keeps in files there (a SQLite database
// and its WAL), without a loop of sleeps.
func WaitDir(dir string, bound time.Duration, done func() bool) bool {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		panic("proctreetest: inotify_init1: " + err.Error())
	}
	defer unix.Close(fd)
	mask := uint32(unix.IN_CLOSE_WRITE | unix.IN_MOVED_TO | unix.IN_CREATE | unix.IN_MODIFY)
	if _, err := unix.InotifyAddWatch(fd, dir, mask); err != nil {
		panic("proctreetest: inotify_add_watch: " + err.Error())
	}
	deadline := time.Now().Add(bound)
	buf := make([]byte, 64*(unix.SizeofInotifyEvent+unix.NAME_MAX+1))
	for {
		if done() {
			return true
		}
		if !waitReadable(fd, time.Until(deadline)) {
			return false
		}
		_, _ = unix.Read(fd, buf) // drain: done looks at the state again
	}
}

// waitReadable blocks until fd is readable, for bound at most.
func waitReadable(fd int, bound time.Duration) bool {
	deadline := time.Now().Add(bound)
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return false
		}
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, err := unix.Poll(fds, int(left.Milliseconds())+1)
		if errors.Is(err, unix.EINTR) {
			continue // a signal (the runtime's or SIGCHLD) is not the notice
		}
		if err != nil {
			panic("proctreetest: poll: " + err.Error())
		}
		if n > 0 {
			return true
		}
	}
}
