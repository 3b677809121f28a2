//go:build !linux

package bench

import (
	"os"
	"syscall"
)

// loadProcAttr: elsewhere than Linux, the client's process ends when
// ServeLoad reads EOF on its stdin (the benchmark closed it or died).
func loadProcAttr() *syscall.SysProcAttr { return nil }

// killGroup kills p.
func killGroup(p *os.Process) { p.Kill() }
