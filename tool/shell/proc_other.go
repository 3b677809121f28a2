//go:build !unix

package shell

import (
	"os"
	"os/exec"
)

// shellPath runs commands: sh -c COMMAND.
const shellPath = "sh"

// prepare: without process groups only the shell itself can be killed.
func prepare(cmd *exec.Cmd) {}

type group struct{ p *os.Process }

func groupOf(cmd *exec.Cmd) group { return group{p: cmd.Process} }

func (g group) terminate()  { _ = g.p.Kill() }
func (g group) kill()       { _ = g.p.Kill() }
func (g group) alive() bool { return false }

func exitStatus(ps *os.ProcessState) (code int, signal string) { return ps.ExitCode(), "" }
