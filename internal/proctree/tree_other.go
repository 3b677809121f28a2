//go:build !unix

package proctree

import "syscall"

// treeSys: without process groups a tree is its root process alone.
type treeSys struct{}

func setpgid(*syscall.SysProcAttr) {}

func (t *Tree) prepare()              {}
func (t *Tree) start() error          { return t.cmd.Start() }
func (t *Tree) waited()               {}
func (t *Tree) signal(syscall.Signal) { t.kill() }
func (t *Tree) alive() bool           { return false }
func (t *Tree) end() error            { t.kill(); return nil }

func (t *Tree) kill() {
	if t.cmd.Process != nil {
		_ = t.cmd.Process.Kill()
	}
}
