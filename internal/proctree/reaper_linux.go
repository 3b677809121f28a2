package proctree

import (
	"fmt"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"
)

var (
	// startMu: every Start of a tree holds it for reading from before the
	// fork until the child is registered in owned; the reaper holds it
	// for writing while it looks for zombies. So it never reaps a child
	// os/exec is about to wait for.
	startMu sync.RWMutex

	ownedMu sync.Mutex
	owned   = map[int]bool{} // roots started and not yet waited for by os/exec
)

func own(pid int) {
	ownedMu.Lock()
	owned[pid] = true
	ownedMu.Unlock()
}

func disown(pid int) {
	ownedMu.Lock()
	delete(owned, pid)
	ownedMu.Unlock()
}

func isOwned(pid int) bool {
	ownedMu.Lock()
	defer ownedMu.Unlock()
	return owned[pid]
}

// The subreaper: held by BecomeSubreaper's callers, released by the last.
var sub struct {
	mu       sync.Mutex
	holds    int
	allHolds int
	stop     chan struct{}
	done     chan struct{}
}

var (
	subreaping atomic.Bool // this process is a child subreaper (ours)
	reapAll    atomic.Bool // a ReapAll hold is held
)

func isSubreaper() bool { return subreaping.Load() }

// BecomeSubreaper makes this process a child subreaper
// (prctl PR_SET_CHILD_SUBREAPER): a process orphaned below it (a daemon
// that double-forked, a setsid'd child whose parent exited) is reparented
// to it rather than to init, so that its tree can still find and kill it.
// A goroutine reaps, at every SIGCHLD, the zombies of those adopted
// processes that policy allows, never a process a tree's exec.Cmd waits
// for. Holds are counted: the last release stops the goroutine and clears
// the flag. A ReapAll hold's release first kills every process still
// descended from this one.
func BecomeSubreaper(policy Policy) (release func(), err error) {
	sub.mu.Lock()
	defer sub.mu.Unlock()
	if sub.holds == 0 {
		if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
			return func() {}, fmt.Errorf("prctl(PR_SET_CHILD_SUBREAPER): %w", err)
		}
		subreaping.Store(true)
		sub.stop, sub.done = make(chan struct{}), make(chan struct{})
		go reapLoop(sub.stop, sub.done)
	}
	sub.holds++
	if policy == ReapAll {
		sub.allHolds++
		reapAll.Store(true)
	}
	var once sync.Once
	return func() { once.Do(func() { releaseHold(policy) }) }, nil
}

func releaseHold(policy Policy) {
	if policy == ReapAll {
		killDescendants()
	}
	sub.mu.Lock()
	defer sub.mu.Unlock()
	if policy == ReapAll {
		sub.allHolds--
		reapAll.Store(sub.allHolds > 0)
	}
	sub.holds--
	if sub.holds > 0 {
		return
	}
	close(sub.stop)
	<-sub.done
	_ = unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)
	subreaping.Store(false)
}

// reapLoop reaps at every SIGCHLD until stop is closed.
func reapLoop(stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGCHLD)
	defer signal.Stop(ch)
	for {
		reapAdopted()
		select {
		case <-ch:
		case <-stop:
			reapAdopted()
			return
		}
	}
}

// reapAdopted reaps this process's zombie children that it may: not a
// tree's root (os/exec waits for it), and, unless a ReapAll hold is held,
// only a process of a tree (died in a tree's cgroup, or seen in a tree by
// the /proc walk). A running child that carries a tree's mark is noted as
// the tree's now, while its environment can still be read.
func reapAdopted() {
	startMu.Lock()
	defer startMu.Unlock()
	all := reapAll.Load()
	for _, pid := range childrenOfSelf() {
		if isOwned(pid) {
			continue
		}
		p, ok := readStat(pid)
		switch {
		case !ok:
		case !p.zombie:
			if t := markedTree(pid); t != nil {
				see(t, map[int]proc{pid: p})
			}
		case all || inOurCgroups(pid) || seenIn(pid, p.start) != nil:
			var ws unix.WaitStatus
			if _, err := unix.Wait4(pid, &ws, unix.WNOHANG, nil); err == nil {
				forgetSeen(pid)
			}
		}
	}
}

// killDescendants SIGKILLs every process descended from this one until
// none runs (for endBound at most), then reaps them.
func killDescendants() {
	self := os.Getpid()
	pollDead(endBound, func() bool {
		procs, ok := readProcs()
		if !ok {
			return true
		}
		running := false
		for pid, p := range descendants(procs, []int{self}) {
			if pid == self || p.zombie {
				continue
			}
			running = true
			signalIf(pid, syscall.SIGKILL, sameProcess(p.start))
		}
		return !running
	})
	reapAdopted()
}
