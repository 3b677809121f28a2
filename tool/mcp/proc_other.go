//go:build !unix

package mcp

import "os/exec"

// setProcAttr: no process groups here; stop kills the server process only.
func setProcAttr(*exec.Cmd) {}

// killGroup: no process groups here.
func killGroup(int) {}
