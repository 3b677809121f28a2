//go:build !unix

package command

import "os/exec"

// defaultShell runs hook commands.
const defaultShell = "sh"

// inOwnGroup: without process groups, cancelling kills the hook process
// only (exec's default).
func inOwnGroup(cmd *exec.Cmd) {}

// killGroup: without process groups there is nothing left to kill.
func killGroup(cmd *exec.Cmd) {}
