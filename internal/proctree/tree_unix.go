//go:build unix && !linux

package proctree

import (
	"errors"
	"syscall"
)

// treeSys: outside Linux a tree is its root's process group, which a
// process that calls setsid or setpgid leaves.
type treeSys struct{}

func setpgid(a *syscall.SysProcAttr) { a.Setpgid = true }

func (t *Tree) prepare()     {}
func (t *Tree) start() error { return t.cmd.Start() }
func (t *Tree) waited()      {}
func (t *Tree) pgid() int    { return t.cmd.Process.Pid }
func (t *Tree) kill()        { t.signal(syscall.SIGKILL) }
func (t *Tree) alive() bool  { return t.cmd.Process != nil && syscall.Kill(-t.pgid(), 0) == nil }

func (t *Tree) signal(sig syscall.Signal) {
	if t.cmd.Process != nil {
		_ = syscall.Kill(-t.pgid(), sig)
	}
}

// end kills the group and waits until signal 0 no longer reaches it
// (zombies, which cannot be told apart here, included).
func (t *Tree) end() error {
	if t.cmd.Process == nil || !t.alive() {
		return nil
	}
	t.kill()
	if !pollDead(endBound, func() bool { return !t.alive() }) {
		return errors.New("the process group of the tree outlived SIGKILL")
	}
	return nil
}
