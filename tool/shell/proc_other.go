//go:build !unix

package shell

import "os"

// shellPath runs commands: sh -c COMMAND.
const shellPath = "sh"

func exitStatus(ps *os.ProcessState) (code int, signal string) { return ps.ExitCode(), "" }
