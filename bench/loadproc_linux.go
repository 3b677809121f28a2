//go:build linux

package bench

import (
	"os"
	"syscall"
)

// loadProcAttr makes a load client's process the leader of its own group
// (so that killGroup reaches whatever it starts) and asks the kernel to
// kill it when the thread that started it dies. Go ends an OS thread only
// when a goroutine locked to it exits locked, which the benchmarks do not
// do, so in practice that is when the benchmark's process dies, however
// it dies (a panic, a timeout, SIGKILL).
func loadProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// killGroup kills the process group that p leads.
func killGroup(p *os.Process) {
	if syscall.Kill(-p.Pid, syscall.SIGKILL) != nil {
		p.Kill()
	}
}
