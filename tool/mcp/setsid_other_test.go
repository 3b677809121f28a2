//go:build !unix

package mcp

import "os/exec"

func setsid(*exec.Cmd) {}
