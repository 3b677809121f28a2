//go:build unix

package command

// defaultShell runs hook commands.
const defaultShell = "/bin/sh"
