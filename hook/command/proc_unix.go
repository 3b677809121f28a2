//go:build unix

package command

import (
	"os/exec"
	"syscall"
)

// defaultShell runs hook commands.
const defaultShell = "/bin/sh"

// inOwnGroup starts cmd in a new process group and makes cancelling it
// (timeout or an ended run) kill the whole group: the hook, its children
// and anything they left running in the background.
func inOwnGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		if cmd.Process == nil {
			return nil
		}
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}

// killGroup kills what is left of cmd's process group once the hook has
// exited (background children it started).
func killGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
