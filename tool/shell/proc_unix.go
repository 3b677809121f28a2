//go:build unix

package shell

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
)

// shellPath runs commands: /bin/sh -c COMMAND.
const shellPath = "/bin/sh"

// prepare makes cmd start in a process group of its own (its pid is the
// group id), so the shell, its children and whatever they leave running in
// the background can be signalled together.
func prepare(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// group is the process group of a started shell.
type group struct{ pgid int }

func groupOf(cmd *exec.Cmd) group { return group{pgid: cmd.Process.Pid} }

// terminate sends SIGTERM to every process of the group.
func (g group) terminate() { _ = syscall.Kill(-g.pgid, syscall.SIGTERM) }

// kill sends SIGKILL to every process of the group.
func (g group) kill() { _ = syscall.Kill(-g.pgid, syscall.SIGKILL) }

// alive reports whether a process of the group still runs (zombies, which
// a non-reaping init may keep around, do not count).
func (g group) alive() bool {
	if err := syscall.Kill(-g.pgid, 0); err != nil {
		// ESRCH: no process left. EPERM: the id now names a group of
		// another user, not ours.
		return false
	}
	return groupHasLiving(g.pgid)
}

// exitStatus returns the shell-style exit code of a finished process
// (128+N when it was ended by signal N) and the signal's name.
func exitStatus(ps *os.ProcessState) (code int, signal string) {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal()), signalName(ws.Signal())
	}
	return ps.ExitCode(), ""
}

func signalName(s syscall.Signal) string {
	for name, n := range signalNumbers {
		if n == int(s) {
			return name
		}
	}
	return fmt.Sprintf("signal %d", int(s))
}
