package command_test

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentpool/agentpool/internal/proctree"
	"github.com/agentpool/agentpool/internal/proctree/proctreetest"
)

// escapeHook starts a process that leaves the hook's process group and
// session (setsid), writes its pid to escaped in the project directory
// and sleeps; the hook goes on once the pid is written.
const escapeHook = `setsid sh -c 'echo $$ > "$CLAUDE_PROJECT_DIR/escaped.tmp" && mv "$CLAUDE_PROJECT_DIR/escaped.tmp" "$CLAUDE_PROJECT_DIR/escaped"; exec sleep 1000' >/dev/null 2>&1 &
while [ ! -s "$CLAUDE_PROJECT_DIR/escaped" ]; do sleep 0.01; done
`

// TestSetsidEscape: what a command hook started and left its process
// group with (setsid) is killed and reaped when the hook exits, and when
// it is killed at its timeout.
func TestSetsidEscape(t *testing.T) {
	for _, mode := range []string{"default", "walk"} {
		t.Run(mode, func(t *testing.T) {
			if mode == "walk" {
				was := proctree.SetCgroups(false)
				t.Cleanup(func() { proctree.SetCgroups(was) })
			}
			t.Run("exit", func(t *testing.T) {
				p := newProject(t, probeManifest, settingsFor("PreToolUse", "", "sh ${CLAUDE_PROJECT_DIR}/hooks/escape.sh", 30),
					map[string]string{"escape.sh": escapeHook + "exit 0"}, &probe{})
				p.run("go")
				wantGone(t, readPID(t, p.dir))
			})
			t.Run("timeout", func(t *testing.T) {
				p := newProject(t, probeManifest, settingsFor("PreToolUse", "", "sh ${CLAUDE_PROJECT_DIR}/hooks/escape.sh", 1),
					map[string]string{"escape.sh": escapeHook + "sleep 30"}, &probe{})
				res := p.run("go")
				if runs := p.hookRuns(res.SessionID); len(runs) != 1 || runs[0]["timed_out"] != true {
					t.Errorf("hook_run %v", runs)
				}
				wantGone(t, readPID(t, p.dir))
			})
		})
	}
}

// readPID reads the pid escapeHook wrote.
func readPID(t *testing.T, dir string) int {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, "escaped"))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// wantGone fails the test unless process pid is gone: killed and reaped
// (kill(pid, 0) is ESRCH).
func wantGone(t *testing.T, pid int) {
	t.Helper()
	if !proctreetest.WaitExit(pid, 5*time.Second) { // its pidfd tells
		_ = syscall.Kill(pid, syscall.SIGKILL)
		t.Fatalf("the escaped process %d outlived the hook", pid)
	}
	if !errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
		t.Fatalf("the escaped process %d exited but was not reaped", pid)
	}
}
