package proctree

import (
	"encoding/hex"
	"os"
	"strconv"
	"sync"
	"syscall"
)

// markEnv is the environment variable that marks the processes of a tree
// that has no cgroup: every process it starts inherits it (unless it
// clears its environment), so a process that left the tree (setsid, then
// its parent exited) is still known as the tree's.
const markEnv = "AGENTPOOL_PROCESS_TREE"

// marked is what the reaper attributes to the trees without a cgroup:
// their running marks, and the processes seen in them (a zombie has no
// environment left to read its mark from).
var marked struct {
	mu    sync.Mutex
	trees map[string]*Tree // by mark ("markEnv=value")
	seen  map[int]seenProc // by pid
}

// seenProc is a process seen in a tree.
type seenProc struct {
	start uint64
	tree  *Tree
}

// newMark returns a new tree mark, "markEnv=PID-RANDOM".
func newMark() string {
	var r [8]byte
	fillRandom(r[:])
	return markEnv + "=" + strconv.Itoa(os.Getpid()) + "-" + hex.EncodeToString(r[:])
}

// addMarked registers a tree that has no cgroup.
func addMarked(t *Tree) {
	marked.mu.Lock()
	defer marked.mu.Unlock()
	if marked.trees == nil {
		marked.trees, marked.seen = map[string]*Tree{}, map[int]seenProc{}
	}
	marked.trees[t.sys.mark] = t
}

// dropMarked forgets a tree and the processes seen in it.
func dropMarked(t *Tree) {
	marked.mu.Lock()
	defer marked.mu.Unlock()
	delete(marked.trees, t.sys.mark)
	for pid, s := range marked.seen {
		if s.tree == t {
			delete(marked.seen, pid)
		}
	}
}

// see records processes of t.
func see(t *Tree, procs map[int]proc) {
	marked.mu.Lock()
	defer marked.mu.Unlock()
	if marked.trees[t.sys.mark] != t {
		return // ended
	}
	for pid, p := range procs {
		marked.seen[pid] = seenProc{start: p.start, tree: t}
	}
}

// seenIn returns the tree process pid (started at start) was seen in.
func seenIn(pid int, start uint64) *Tree {
	marked.mu.Lock()
	defer marked.mu.Unlock()
	if s, ok := marked.seen[pid]; ok && s.start == start {
		return s.tree
	}
	return nil
}

// forgetSeen forgets a reaped process.
func forgetSeen(pid int) {
	marked.mu.Lock()
	defer marked.mu.Unlock()
	delete(marked.seen, pid)
}

// markedTree returns the running tree whose mark process pid carries
// (nil: none).
func markedTree(pid int) *Tree {
	marked.mu.Lock()
	n := len(marked.trees)
	marked.mu.Unlock()
	if n == 0 {
		return nil
	}
	mark := markOf(pid)
	if mark == "" {
		return nil
	}
	marked.mu.Lock()
	defer marked.mu.Unlock()
	return marked.trees[mark]
}

// members walks /proc for the processes of t (zombies included): the
// descendants of its root while the root is not reaped, of the processes
// that carry its mark (escaped ones, adopted by this process when it is a
// subreaper, by another otherwise), and of those seen in it before; it
// records them as seen. False when /proc cannot be read.
func (t *Tree) members() (map[int]proc, bool) {
	procs, ok := readProcs()
	if !ok {
		return nil, false
	}
	root, rootStart := t.rootProcess()
	var roots []int
	if p, ok := procs[root]; ok && p.start == rootStart {
		roots = append(roots, root)
	}
	self := os.Getpid()
	adopting := isSubreaper()
	for pid, p := range procs {
		if pid == self || pid == root || p.zombie {
			continue
		}
		// A process that left the tree was adopted by this process
		// (a subreaper) or by some other: with a subreaper only this
		// one's children need reading.
		if (!adopting || p.ppid == self) && markOf(pid) == t.sys.mark {
			roots = append(roots, pid)
		} else if seenIn(pid, p.start) == t {
			roots = append(roots, pid)
		}
	}
	ms := descendants(procs, roots)
	delete(ms, self)
	see(t, ms)
	return ms, true
}

// sameProcess returns the check of signalIf for a process that started
// at start.
func sameProcess(start uint64) func(pid int) bool {
	return func(pid int) bool {
		p, ok := readStat(pid)
		return ok && p.start == start
	}
}

// signalMembers sends sig to the running members of t; false when none
// runs. The root is signalled through os.Process, which holds its pidfd.
// Without /proc only the root's process group can be reached.
func (t *Tree) signalMembers(sig syscall.Signal) bool {
	root, _ := t.rootProcess()
	ms, ok := t.members()
	if !ok {
		_ = syscall.Kill(-root, sig)
		return syscall.Kill(-root, 0) == nil
	}
	running := false
	for pid, p := range ms {
		if p.zombie {
			continue
		}
		running = true
		if pid == root {
			_ = t.cmd.Process.Signal(sig)
			continue
		}
		signalIf(pid, sig, sameProcess(p.start))
	}
	return running
}

// livingMember reports whether a member of t runs.
func (t *Tree) livingMember() bool {
	ms, ok := t.members()
	if !ok {
		root, _ := t.rootProcess()
		return syscall.Kill(-root, 0) == nil
	}
	for _, p := range ms {
		if !p.zombie {
			return true
		}
	}
	return false
}
