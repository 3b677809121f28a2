package mcp

import (
	"os/exec"
	"syscall"
)

// setDeathSignal has the kernel SIGKILL the server if agentpool dies.
// (Pdeathsig fires when the thread that started the child exits; the Go
// runtime only ends threads of goroutines that exit while locked to one.)
func setDeathSignal(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
