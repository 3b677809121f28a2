package proctree

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"
)

// cgroupDirPrefix names the directory this process makes for its trees'
// cgroups, beside the cgroup it runs in: agentpool-PID-RANDOM.
const cgroupDirPrefix = "agentpool-"

// cgroups is this process's use of cgroup v2: a directory of its own
// (base) under the cgroup it runs in, made when a tree needs it and
// removed when the last tree is done with it, holding a cgroup per tree.
var cgroups struct {
	mu       sync.Mutex
	off      bool   // SetCgroups(false)
	unusable bool   // this system does not let this process use them
	probed   bool   // a first tree checked that processes can start in a cgroup
	mount    string // where the cgroup2 hierarchy is mounted
	self     string // this process's cgroup, from the hierarchy's root
	base     string // the directory made under it, relative to mount ("" none)
	users    int    // trees that use base
	next     int
}

// ownPrefix is what the cgroup path of every tree of this process starts
// with (self + "/agentpool-PID-"), set once the hierarchy is found: the
// reaper reads it without a lock.
var ownPrefix atomic.Pointer[string]

// treeCgroup is the cgroup of one tree.
type treeCgroup struct {
	dir  string // its directory
	path string // its path in the hierarchy, as /proc/PID/cgroup shows it
}

// SetCgroups turns the use of cgroups on (the default, where the system
// allows it) or off for the trees made afterwards, and returns the
// previous setting. Tests use it to exercise the /proc walk.
func SetCgroups(on bool) (was bool) {
	cgroups.mu.Lock()
	defer cgroups.mu.Unlock()
	was = !cgroups.off
	cgroups.off = !on
	return was
}

// newTreeCgroup makes the cgroup of a new tree; nil when cgroups cannot
// be used here (no cgroup2 hierarchy this process may write to, no
// cgroup.kill, no clone3 into a cgroup): the tree then uses the /proc
// walk.
func newTreeCgroup() *treeCgroup {
	cgroups.mu.Lock()
	defer cgroups.mu.Unlock()
	if cgroups.off || cgroups.unusable {
		return nil
	}
	if cgroups.base == "" && !makeBase() {
		return nil
	}
	cgroups.next++
	cg := &treeCgroup{path: cgroups.base + "/t" + strconv.Itoa(cgroups.next)}
	cg.dir = cgroups.mount + cg.path
	if err := os.Mkdir(cg.dir, 0o755); err != nil {
		dropBase()
		return nil
	}
	cgroups.users++
	if !cgroups.probed {
		cgroups.probed = true
		if !canStartIn(cg.dir) {
			cgroups.unusable = true
			_ = os.Remove(cg.dir)
			cgroups.users--
			dropBase()
			return nil
		}
	}
	return cg
}

// makeBase makes this process's directory beside its cgroup (mu held);
// false, and cgroups unusable, when there is no cgroup2 hierarchy it may
// write to or it has no cgroup.kill (Linux before 5.14).
func makeBase() bool {
	if cgroups.mount == "" {
		cgroups.mount, cgroups.self = cgroup2Mount(), ownCgroup()
		if cgroups.mount == "" || cgroups.self == "" {
			cgroups.unusable = true
			return false
		}
		cgroups.self = strings.TrimSuffix(cgroups.self, "/") // the root is "/"
		prefix := fmt.Sprintf("%s/%s%d-", cgroups.self, cgroupDirPrefix, os.Getpid())
		ownPrefix.Store(&prefix)
		sweepStale(cgroups.mount + cgroups.self)
	}
	var r [6]byte
	fillRandom(r[:])
	base := *ownPrefix.Load() + hex.EncodeToString(r[:])
	if err := os.Mkdir(cgroups.mount+base, 0o755); err != nil {
		cgroups.unusable = true // read-only, not ours, or too many cgroups
		return false
	}
	if _, err := os.Stat(cgroups.mount + base + "/cgroup.kill"); err != nil {
		_ = os.Remove(cgroups.mount + base)
		cgroups.unusable = true
		return false
	}
	cgroups.base = base
	return true
}

// dropBase removes base once no tree uses it (mu held).
func dropBase() {
	if cgroups.users == 0 && cgroups.base != "" {
		_ = os.Remove(cgroups.mount + cgroups.base)
		cgroups.base = ""
	}
}

// canStartIn checks, once, that a process can be started in the cgroup
// dir (clone3 with CLONE_INTO_CGROUP, Linux 5.7, and the right to move
// processes there): it starts a program that does not exist (cgroupfs
// holds no such file). The exec's "no such file" means the child was
// made in the cgroup; any other error means it could not be.
func canStartIn(dir string) bool {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	probe := exec.Command(filepath.Join(dir, "no-such-program"))
	probe.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: fd}
	startMu.RLock() // the failed child is reaped by os/exec: not the reaper's
	err = probe.Start()
	startMu.RUnlock()
	if err == nil { // cannot happen; do not leave it running
		_ = probe.Process.Kill()
		_ = probe.Wait()
		return false
	}
	return errors.Is(err, syscall.ENOENT)
}

// cgroup2Mount returns where the cgroup2 hierarchy is mounted (the
// "unified" one of a hybrid system), from /proc/self/mountinfo.
func cgroup2Mount() string {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// id parent major:minor root mountpoint options ... - fstype source superoptions
		fields := strings.Fields(sc.Text())
		for i, fl := range fields {
			if fl == "-" && i+1 < len(fields) && fields[i+1] == "cgroup2" && len(fields) > 4 {
				return unescapeMount(fields[4])
			}
		}
	}
	return ""
}

// unescapeMount undoes mountinfo's octal escapes (\040 is a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// ownCgroup returns this process's cgroup v2 path ("0::PATH" in
// /proc/self/cgroup).
func ownCgroup() string { return cgroupOf("self") }

// cgroupOf returns the cgroup v2 path of process pid ("self" for this
// one); a zombie keeps its cgroup's path (with " (deleted)" once the
// cgroup is removed).
func cgroupOf(pid string) string {
	b, err := os.ReadFile("/proc/" + pid + "/cgroup")
	if err != nil {
		return ""
	}
	for line := range bytes.Lines(b) {
		if p, ok := bytes.CutPrefix(line, []byte("0::")); ok {
			return string(bytes.TrimRight(p, "\n"))
		}
	}
	return ""
}

// inOurCgroups reports whether process pid is, or died, in the cgroup of
// a tree of this process.
func inOurCgroups(pid int) bool {
	prefix := ownPrefix.Load()
	return prefix != nil && strings.HasPrefix(cgroupOf(strconv.Itoa(pid)), *prefix)
}

// sweepStale removes the directories that agentpool processes that are
// gone left beside dir (killed before they could remove them). Only empty
// cgroups can be removed: one where a process still runs stays.
func sweepStale(dir string) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		rest, ok := strings.CutPrefix(e.Name(), cgroupDirPrefix)
		pidText, _, ok2 := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidText)
		if !ok || !ok2 || err != nil || !e.IsDir() || pid == os.Getpid() || !errors.Is(unix.Kill(pid, 0), unix.ESRCH) {
			continue
		}
		sub := filepath.Join(dir, e.Name())
		trees, _ := os.ReadDir(sub)
		for _, t := range trees {
			if t.IsDir() {
				_ = os.Remove(filepath.Join(sub, t.Name()))
			}
		}
		_ = os.Remove(sub)
	}
}

// fd opens the cgroup's directory for clone3.
func (cg *treeCgroup) fd() (int, error) {
	return unix.Open(cg.dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
}

// pids lists the processes of the cgroup (zombies are not listed).
func (cg *treeCgroup) pids() []int {
	b, _ := os.ReadFile(cg.dir + "/cgroup.procs")
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

// populated reports whether a process runs in the cgroup; true when it
// cannot be told.
func (cg *treeCgroup) populated() bool {
	b, err := os.ReadFile(cg.dir + "/cgroup.events")
	if err != nil {
		return !errors.Is(err, os.ErrNotExist)
	}
	return !bytes.Contains(b, []byte("populated 0"))
}

// kill SIGKILLs every process of the cgroup, the ones forking meanwhile
// included: the kernel does it, not a loop over a list.
func (cg *treeCgroup) kill() {
	_ = os.WriteFile(cg.dir+"/cgroup.kill", []byte("1"), 0)
}

// holds reports whether process pid is in the cgroup.
func (cg *treeCgroup) holds(pid int) bool { return cgroupOf(strconv.Itoa(pid)) == cg.path }

// remove removes the cgroup (it must be empty of running processes) and
// base after its last tree.
func (cg *treeCgroup) remove() error {
	err := os.Remove(cg.dir)
	if errors.Is(err, os.ErrNotExist) {
		err = nil
	}
	cgroups.mu.Lock()
	if cgroups.users > 0 {
		cgroups.users--
	}
	dropBase()
	cgroups.mu.Unlock()
	return err
}
