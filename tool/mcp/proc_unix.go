//go:build unix && !linux

package mcp

import (
	"os/exec"
	"syscall"
)

// setProcAttr puts the server in its own process group, so that killGroup
// reaches its children. (No parent-death signal outside Linux.)
func setProcAttr(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// killGroup SIGKILLs the process group a server leads.
func killGroup(pid int) { _ = syscall.Kill(-pid, syscall.SIGKILL) }
