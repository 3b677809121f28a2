package mcp

import (
	"os/exec"
	"syscall"
)

// setProcAttr puts the server in its own process group, so that killGroup
// reaches its children, and has the kernel SIGKILL it if agentpool dies.
// (Pdeathsig fires when the thread that started the child exits; the Go
// runtime only ends threads of goroutines that exit while locked to one.)
func setProcAttr(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// killGroup SIGKILLs the process group a server leads (ESRCH, an empty
// group, is fine).
func killGroup(pid int) { _ = syscall.Kill(-pid, syscall.SIGKILL) }
