//go:build !linux

package mcp

import "os/exec"

// setDeathSignal: only Linux has a parent-death signal.
func setDeathSignal(*exec.Cmd) {}
