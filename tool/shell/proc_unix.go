//go:build unix

package shell

import (
	"fmt"
	"os"
	"syscall"
)

// shellPath runs commands: /bin/sh -c COMMAND.
const shellPath = "/bin/sh"

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
