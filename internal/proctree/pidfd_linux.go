package proctree

import (
	"errors"
	"syscall"

	"golang.org/x/sys/unix"
)

// signalIf sends sig to process pid if it is the process isOurs
// recognises. A pid is only a number: the process it named may have ended
// and the number gone to another one, so the process is held by a pidfd
// first (it names one process for good) and checked after: the check sees
// the process the pidfd holds, or one that came after it (and fails).
// Kernels without pidfds (before 5.3) get a plain kill after the check.
func signalIf(pid int, sig syscall.Signal, isOurs func(pid int) bool) {
	fd, err := unix.PidfdOpen(pid, 0)
	if errors.Is(err, unix.ENOSYS) {
		if isOurs(pid) {
			_ = unix.Kill(pid, sig)
		}
		return
	}
	if err != nil {
		return // ESRCH: gone
	}
	defer unix.Close(fd)
	if isOurs(pid) {
		_ = unix.PidfdSendSignal(fd, sig, nil, 0)
	}
}
