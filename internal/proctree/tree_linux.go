package proctree

import (
	"fmt"
	"slices"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// treeSys is a tree on Linux: its cgroup, or (without one) its mark.
type treeSys struct {
	cg   *treeCgroup // nil: the tree is found by walking /proc
	mark string      // without a cgroup: "markEnv=value", in its processes' environment

	mu        sync.Mutex // guards what follows: Start sets it, Cancel may read it meanwhile
	started   bool
	released  bool // the cgroup removed, the mark forgotten
	root      int  // the root's pid
	rootStart uint64
}

func setpgid(a *syscall.SysProcAttr) { a.Setpgid = true }

// prepare gives the tree a cgroup, or else a mark.
func (t *Tree) prepare() {
	if t.sys.cg = newTreeCgroup(); t.sys.cg == nil {
		t.useMark()
	}
}

func (t *Tree) useMark() {
	t.sys.mark = newMark()
	t.cmd.Env = append(t.cmd.Environ(), t.sys.mark)
}

// start starts the root in the tree's cgroup (clone3 puts it there as it
// is made, before it runs a single instruction), or with its mark. While
// it starts the reaper waits: the child, exited or not, is not reaped
// before it is registered as os/exec's to wait for.
func (t *Tree) start() error {
	t.sys.mu.Lock()
	defer t.sys.mu.Unlock()
	fd := -1
	if cg := t.sys.cg; cg != nil {
		var err error
		if fd, err = cg.fd(); err != nil {
			_ = cg.remove()
			t.sys.cg = nil
			t.useMark()
		} else {
			t.cmd.SysProcAttr.UseCgroupFD, t.cmd.SysProcAttr.CgroupFD = true, fd
		}
	}
	if t.sys.mark != "" {
		addMarked(t)
	}
	startMu.RLock()
	err := t.cmd.Start()
	if err == nil {
		own(t.cmd.Process.Pid)
	}
	startMu.RUnlock()
	if fd >= 0 {
		_ = unix.Close(fd)
	}
	if err != nil {
		_ = t.releaseLocked()
		return err
	}
	t.sys.started = true
	t.sys.root = t.cmd.Process.Pid
	if p, ok := readStat(t.sys.root); ok { // not reaped before Wait
		t.sys.rootStart = p.start
	}
	return nil
}

// rootProcess returns the root's pid and start time (0, 0 before Start).
func (t *Tree) rootProcess() (int, uint64) {
	t.sys.mu.Lock()
	defer t.sys.mu.Unlock()
	return t.sys.root, t.sys.rootStart
}

// waited: os/exec has reaped the root; the reaper may reap that pid again
// (another process's, later).
func (t *Tree) waited() {
	if t.cmd.Process != nil {
		disown(t.cmd.Process.Pid)
	}
}

func (t *Tree) signal(sig syscall.Signal) {
	if cg := t.sys.cg; cg != nil {
		for _, pid := range cg.pids() {
			signalIf(pid, sig, cg.holds)
		}
		return
	}
	t.signalMembers(sig)
}

func (t *Tree) kill() {
	if cg := t.sys.cg; cg != nil {
		cg.kill()
		return
	}
	t.signalMembers(syscall.SIGKILL)
}

func (t *Tree) alive() bool {
	if cg := t.sys.cg; cg != nil {
		return cg.populated()
	}
	return t.livingMember()
}

func (t *Tree) end() error {
	t.sys.mu.Lock()
	started := t.sys.started
	t.sys.mu.Unlock()
	if !started {
		t.sys.mu.Lock()
		defer t.sys.mu.Unlock()
		return t.releaseLocked()
	}
	var dead bool
	if cg := t.sys.cg; cg != nil {
		cg.kill()
		dead = pollDead(endBound, func() bool { return !cg.populated() })
	} else {
		dead = pollDead(endBound, func() bool { return !t.signalMembers(syscall.SIGKILL) })
	}
	reapAdopted()
	if !dead {
		return fmt.Errorf("processes of the tree outlived SIGKILL for %s: %v", endBound, t.running())
	}
	t.sys.mu.Lock()
	defer t.sys.mu.Unlock()
	return t.releaseLocked()
}

// running lists the pids of the tree that run.
func (t *Tree) running() []int {
	if cg := t.sys.cg; cg != nil {
		return cg.pids()
	}
	ms, _ := t.members()
	var pids []int
	for pid, p := range ms {
		if !p.zombie {
			pids = append(pids, pid)
		}
	}
	slices.Sort(pids)
	return pids
}

// releaseLocked removes the tree's cgroup or forgets its mark (sys.mu
// held), once.
func (t *Tree) releaseLocked() error {
	if t.sys.released {
		return nil
	}
	t.sys.released = true
	if t.sys.mark != "" {
		dropMarked(t)
	}
	if t.sys.cg != nil {
		return t.sys.cg.remove()
	}
	return nil
}
