//go:build unix

package bench

import (
	"syscall"
	"time"
)

// CPUTime returns the user plus system CPU time the process has used. On a
// shared machine, CPU time per op is a better estimate of the work than
// wall time, which also counts the time other processes held the cores.
func CPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
