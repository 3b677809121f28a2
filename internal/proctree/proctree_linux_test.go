package proctree

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// escapeScript starts a process that leaves the tree's process group and
// session (setsid), records its pid in the file "escaped", and is
// orphaned when the script exits, which it does once the pid is written.
const escapeScript = `setsid sh -c 'echo $$ > escaped.tmp && mv escaped.tmp escaped; exec sleep 1000' &
while [ ! -s escaped ]; do sleep 0.01; done`

// hold makes the test process a subreaper with policy until the test
// ends.
func hold(t *testing.T, policy Policy) {
	t.Helper()
	release, err := BecomeSubreaper(policy)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(release)
}

// eachMode runs f with trees in cgroups (skipped where this process may
// not make them) and with trees found by the /proc walk.
func eachMode(t *testing.T, f func(t *testing.T)) {
	t.Run("cgroup", func(t *testing.T) {
		probe := New(exec.Command("/bin/true"))
		usable := probe.sys.cg != nil
		if err := probe.End(); err != nil {
			t.Fatal(err)
		}
		if !usable {
			t.Skip("no cgroup v2 hierarchy this process may write to")
		}
		f(t)
	})
	t.Run("walk", func(t *testing.T) {
		was := SetCgroups(false)
		t.Cleanup(func() { SetCgroups(was) })
		f(t)
	})
}

// startEscape starts escapeScript as a tree in a temporary directory,
// waits for its root (which exits once the escaped process runs) and
// returns the tree and the escaped process's pid.
func startEscape(t *testing.T, ctx context.Context) (*Tree, int) {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", escapeScript)
	cmd.Dir = dir
	tr := New(cmd)
	if err := tr.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tr.End() })
	if err := tr.Wait(); err != nil {
		t.Fatalf("the script failed: %v", err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "escaped"))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	if !running(pid) {
		t.Fatalf("the escaped process %d does not run", pid)
	}
	return tr, pid
}

// running reports whether pid runs (a zombie does not).
func running(pid int) bool {
	p, ok := readStat(pid)
	return ok && !p.zombie
}

// wantReaped fails the test unless pid is gone: killed and reaped (kill
// answers ESRCH).
func wantReaped(t *testing.T, pid int) {
	t.Helper()
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		p, _ := readStat(pid)
		t.Errorf("process %d is still there (kill 0: %v, zombie %v)", pid, err, p.zombie)
	}
}

// TestSetsidEscape: a process that called setsid and was orphaned (its
// parent, the tree's root, exited) is still the tree's: End kills it and
// the subreaper reaps it.
func TestSetsidEscape(t *testing.T) {
	eachMode(t, func(t *testing.T) {
		hold(t, ReapTrees)
		tr, pid := startEscape(t, context.Background())
		if p, _ := readStat(pid); p.ppid != os.Getpid() {
			t.Errorf("the escaped process's parent is %d, not this subreaper", p.ppid)
		}
		if !tr.Alive() {
			t.Error("Alive is false while the escaped process runs")
		}
		if err := tr.End(); err != nil {
			t.Fatal(err)
		}
		wantReaped(t, pid)
		if tr.Alive() {
			t.Error("Alive after End")
		}
	})
}

// Without the subreaper the escaped process is init's: the walk finds it
// by its mark among all processes.
func TestSetsidEscapeWithoutSubreaper(t *testing.T) {
	eachMode(t, func(t *testing.T) {
		tr, pid := startEscape(t, context.Background())
		if err := tr.End(); err != nil {
			t.Fatal(err)
		}
		if running(pid) {
			t.Errorf("the escaped process %d outlived End", pid)
		}
	})
}

// Signal reaches the escaped process: SIGTERM ends the sleep.
func TestSignalReachesEscaped(t *testing.T) {
	eachMode(t, func(t *testing.T) {
		hold(t, ReapTrees)
		tr, pid := startEscape(t, context.Background())
		tr.Signal(syscall.SIGTERM)
		if !pollDead(10*time.Second, func() bool { return !running(pid) }) {
			t.Fatalf("the escaped process %d survived SIGTERM", pid)
		}
		// A process that died is a zombie until the subreaper reaps it
		// (ReapTrees does so in the background), and in cgroup mode Alive
		// reads the cgroup, which holds it until then: wait for that.
		if !pollDead(10*time.Second, func() bool { return !tr.Alive() }) {
			t.Error("Alive after everything died")
		}
		if err := tr.End(); err != nil {
			t.Fatal(err)
		}
		wantReaped(t, pid)
	})
}

// The Cancel of an exec.CommandContext kills the whole tree.
func TestCancelKillsTree(t *testing.T) {
	eachMode(t, func(t *testing.T) {
		hold(t, ReapTrees)
		ctx, cancel := context.WithCancel(context.Background())
		dir := t.TempDir()
		cmd := exec.CommandContext(ctx, "/bin/sh", "-c", escapeScript+"\nsleep 1000")
		cmd.Dir = dir
		tr := New(cmd)
		if err := tr.Start(); err != nil {
			t.Fatal(err)
		}
		var pid int
		for !pollDead(10*time.Second, func() bool {
			b, _ := os.ReadFile(filepath.Join(dir, "escaped"))
			pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
			return pid > 0
		}) {
			t.Fatal("the escaped process never started")
		}
		cancel()
		if err := tr.Wait(); err == nil {
			t.Error("Wait after cancel: no error")
		}
		if !pollDead(10*time.Second, func() bool { return !running(pid) }) {
			t.Errorf("the escaped process %d survived the cancellation", pid)
		}
		if err := tr.End(); err != nil {
			t.Fatal(err)
		}
		wantReaped(t, pid)
	})
}

// The reaper never takes the exit status of a process os/exec waits for:
// a tree's root even with ReapAll, another child of the program with
// ReapTrees, while SIGCHLDs keep it busy.
func TestReaperKeepsExitStatus(t *testing.T) {
	for _, policy := range []Policy{ReapTrees, ReapAll} {
		t.Run(strconv.Itoa(int(policy)), func(t *testing.T) {
			hold(t, policy)
			var wg sync.WaitGroup
			for i := range 40 {
				wg.Go(func() {
					cmd := exec.Command("/bin/sh", "-c", "exit 7")
					var err error
					if i%2 == 0 {
						tr := New(cmd)
						if err = tr.Start(); err == nil {
							err = tr.Wait()
							_ = tr.End()
						}
					} else if policy == ReapTrees {
						err = cmd.Run()
					} else {
						return // ReapAll may take it: documented
					}
					var ee *exec.ExitError
					if !errors.As(err, &ee) || ee.ExitCode() != 7 {
						t.Errorf("command %d: %v, want exit status 7", i, err)
					}
				})
			}
			wg.Wait()
		})
	}
}

// Releasing a ReapAll hold kills every process still descended from this
// one, a child started without a tree included.
func TestReapAllReleaseKillsDescendants(t *testing.T) {
	release, err := BecomeSubreaper(ReapAll)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("setsid", "sleep", "1000")
	if err := cmd.Start(); err != nil {
		release()
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	release()
	if running(pid) {
		t.Errorf("process %d outlived the release", pid)
	}
	_ = cmd.Wait() // reaped by the release or here
}

// A tree whose start fails leaves nothing: no cgroup, no mark.
func TestStartFailure(t *testing.T) {
	eachMode(t, func(t *testing.T) {
		tr := New(exec.Command(filepath.Join(t.TempDir(), "missing")))
		if err := tr.Start(); err == nil {
			t.Fatal("started a missing program")
		}
		if err := tr.End(); err != nil {
			t.Fatal(err)
		}
		if tr.sys.cg != nil {
			if _, err := os.Stat(tr.sys.cg.dir); !os.IsNotExist(err) {
				t.Errorf("cgroup %s left: %v", tr.sys.cg.dir, err)
			}
		}
		marked.mu.Lock()
		n := len(marked.trees)
		marked.mu.Unlock()
		if n != 0 {
			t.Errorf("%d marked trees left", n)
		}
	})
}

// An escaped process that exits on its own while its tree still runs is
// reaped at its SIGCHLD, not left a zombie until the tree ends.
func TestReaperReapsAdoptedZombie(t *testing.T) {
	eachMode(t, func(t *testing.T) {
		hold(t, ReapTrees)
		dir := t.TempDir()
		cmd := exec.Command("/bin/sh", "-c", `setsid sh -c 'echo $$ > escaped.tmp && mv escaped.tmp escaped; while [ ! -e stop ]; do sleep 0.01; done' &
while [ ! -s escaped ]; do sleep 0.01; done`)
		cmd.Dir = dir
		tr := New(cmd)
		if err := tr.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = tr.End() })
		if err := tr.Wait(); err != nil {
			t.Fatal(err)
		}
		b, _ := os.ReadFile(filepath.Join(dir, "escaped"))
		pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		p, ok := readStat(pid)
		if !ok || p.ppid != os.Getpid() {
			t.Fatalf("the escaped process %d is not this subreaper's child (%v)", pid, ok)
		}
		if tr.sys.cg == nil {
			// Walk mode reaps only what it saw running in a tree (doc.go,
			// Limits): its reaper notes the adopted process at the SIGCHLD
			// of its old parent, which a loaded machine may deliver after
			// the process could exit, so it is stopped once seen.
			if !pollDead(10*time.Second, func() bool { return seenIn(pid, p.start) != nil }) {
				t.Fatalf("the reaper never saw the escaped process %d in its tree", pid)
			}
		}
		if err := os.WriteFile(filepath.Join(dir, "stop"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if !pollDead(10*time.Second, func() bool { return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) }) {
			p, _ = readStat(pid)
			t.Errorf("the escaped process %d was not reaped (zombie %v)", pid, p.zombie)
		}
	})
}
