package proctree

import (
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// endBound is how long End waits for the processes of a tree to die after
// SIGKILL before it reports them (a process in uninterruptible sleep).
var endBound = 5 * time.Second

// Tree is a command started as the root of a process tree, with every
// process it starts. Once Start has returned its methods are safe for
// concurrent use (the Cancel it installs may run during Start).
type Tree struct {
	cmd *exec.Cmd
	sys treeSys // the platform's part

	endOnce sync.Once
	endErr  error
}

// New prepares cmd, not yet started, to start as the root of a tree: in a
// process group of its own and, on Linux, in a cgroup of its own or with
// the tree's mark in its environment. A Cancel function that
// exec.CommandContext set is replaced by one that kills the whole tree.
// Call New once cmd is configured (the mark is added to its Env), then
// Start, and End once done with it.
func New(cmd *exec.Cmd) *Tree {
	t := &Tree{cmd: cmd}
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	setpgid(cmd.SysProcAttr)
	if cmd.Cancel != nil {
		cmd.Cancel = func() error {
			t.Kill()
			return nil
		}
	}
	t.prepare()
	return t
}

// Start starts the command. After an error nothing runs and End has
// nothing left to do.
func (t *Tree) Start() error { return t.start() }

// Wait waits for the root process to exit (exec.Cmd.Wait) and returns its
// error. The rest of the tree may still run: see Alive and End.
func (t *Tree) Wait() error {
	err := t.cmd.Wait()
	t.waited()
	return err
}

// Signal sends sig to every process of the tree that runs. A process
// forked while it does so may miss it; Kill and End miss none.
func (t *Tree) Signal(sig syscall.Signal) { t.signal(sig) }

// Kill sends SIGKILL to every process of the tree; it does not wait.
func (t *Tree) Kill() { t.kill() }

// Alive reports whether a process of the tree still runs (a zombie, dead
// and waiting to be reaped, does not count).
func (t *Tree) Alive() bool { return t.alive() }

// End kills every process of the tree that still runs, waits until none
// does, reaps those this process adopted, and frees what the tree held.
// It returns an error naming the processes that outlived SIGKILL for
// endBound. Later calls return the first call's result; the root process
// is still the caller's to Wait for.
func (t *Tree) End() error {
	t.endOnce.Do(func() { t.endErr = t.end() })
	return t.endErr
}

// pollDead calls dead with a growing pause (1 ms to 50 ms) until it
// returns true or d has passed; it returns dead's last answer.
func pollDead(d time.Duration, dead func() bool) bool {
	deadline := time.Now().Add(d)
	for pause := time.Millisecond; ; pause = min(2*pause, 50*time.Millisecond) {
		if dead() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(pause)
	}
}
