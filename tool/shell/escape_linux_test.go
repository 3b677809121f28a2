package shell

import (
	"errors"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentpool/agentpool/internal/proctree"
	"github.com/agentpool/agentpool/internal/proctree/proctreetest"
	"github.com/agentpool/agentpool/tool"
)

// escapeCommand starts a process that leaves the shell's process group
// and session (setsid), writes its pid to the file "escaped" and sleeps;
// the shell goes on once the pid is written.
const escapeCommand = `setsid sh -c 'echo $$ > escaped.tmp && mv escaped.tmp escaped; exec sleep 1000' &
while [ ! -s escaped ]; do sleep 0.01; done`

// eachTreeMode runs f with the process trees of this system (cgroups
// where this process may make them) and with the /proc walk.
func eachTreeMode(t *testing.T, f func(t *testing.T)) {
	t.Run("default", f)
	t.Run("walk", func(t *testing.T) {
		was := proctree.SetCgroups(false)
		t.Cleanup(func() { proctree.SetCgroups(was) })
		f(t)
	})
}

// wantGone fails the test unless process pid is gone: killed and reaped
// (by the tools, not by the test), so that kill(pid, 0) is ESRCH.
func wantGone(t *testing.T, pid int) {
	t.Helper()
	if !proctreetest.WaitExit(pid, 5*time.Second) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		t.Fatalf("the escaped process %d outlived its command", pid)
	}
	if !errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
		t.Fatalf("the escaped process %d exited but was not reaped", pid)
	}
}

// TestSetsidEscape: a process a Bash command started that left its
// process group with setsid, and was orphaned when the shell exited, is
// killed when the call ends; nothing holds the output open.
func TestSetsidEscape(t *testing.T) {
	eachTreeMode(t, func(t *testing.T) {
		e := newEnv(t)
		r := e.call(Bash, BashArgs{Command: escapeCommand + "\necho done"})
		if r.Content != "done\n\nExit code: 0" {
			t.Errorf("%q", r.Content)
		}
		wantGone(t, e.readPid("escaped"))
	})
}

// TestSetsidEscapeBackground: the same from a background shell, when
// KillShell stops it, when it exits on its own, and when the toolset is
// closed (the pool's end).
func TestSetsidEscapeBackground(t *testing.T) {
	eachTreeMode(t, func(t *testing.T) {
		t.Run("KillShell", func(t *testing.T) {
			e := newEnv(t)
			e.call(Bash, BashArgs{Command: escapeCommand + "\nsleep 1000", RunInBackground: true})
			pid := e.readPid("escaped")
			if r := e.call(KillShell, KillShellArgs{ShellID: "bash_1"}); !strings.HasPrefix(r.Content, "Successfully killed shell: bash_1") {
				t.Fatalf("%q", r.Content)
			}
			wantGone(t, pid)
		})
		t.Run("exit", func(t *testing.T) {
			e := newEnv(t)
			e.call(Bash, BashArgs{Command: escapeCommand + "\nexit 3", RunInBackground: true})
			pid := e.readPid("escaped")
			_, last := e.bashOutputUntil("bash_1", func(_ string, r tool.Result) bool { return r.Metadata["running"] == false })
			if lastLine(last.Content) != "Status: exited with code 3" {
				t.Fatalf("%q", last.Content)
			}
			wantGone(t, pid)
		})
		t.Run("Close", func(t *testing.T) {
			e := newEnv(t)
			e.call(Bash, BashArgs{Command: escapeCommand + "\nsleep 1000", RunInBackground: true})
			pid := e.readPid("escaped")
			if err := e.ts.Close(); err != nil {
				t.Fatal(err)
			}
			wantGone(t, pid)
		})
	})
}
