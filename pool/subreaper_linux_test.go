package pool_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/pool"
)

// isSubreaper asks the kernel whether this process is a child subreaper.
func isSubreaper(t *testing.T) bool {
	t.Helper()
	var flag int32
	if err := unix.Prctl(unix.PR_GET_CHILD_SUBREAPER, uintptr(unsafe.Pointer(&flag)), 0, 0, 0); err != nil {
		t.Fatal(err)
	}
	return flag != 0
}

// TestSubreaperOption: with Options.Subreaper the process is a subreaper
// from Build to Close, and a process a Bash command left behind in a
// session of its own (setsid) is gone, killed and reaped, once the call
// ended.
func TestSubreaperOption(t *testing.T) {
	if isSubreaper(t) {
		t.Fatal("a subreaper before the pool")
	}
	dir := t.TempDir()
	command, _ := json.Marshal(`setsid sh -c 'echo $$ > escaped.tmp && mv escaped.tmp escaped; exec sleep 1000' &
while [ ! -s escaped ]; do sleep 0.01; done`)
	m, err := config.Parse("a.yaml", []byte(`agents:
  a:
    tools: [execution]
    tool_approval: {Bash: allow}
    model:
      type: scripted
      turns:
        - tool_calls: [{name: Bash, args: {command: `+string(command)+`}}]
        - {text: done}
`))
	if err != nil {
		t.Fatal(err)
	}
	p, err := pool.New(m, pool.Options{Workspace: dir, Subreaper: true})
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	t.Cleanup(func() {
		if !closed {
			p.Close()
		}
	})
	if !isSubreaper(t) {
		t.Error("not a subreaper while the pool is open")
	}
	res := run(t, p, "a", "go")
	if res.Output != "done" {
		t.Errorf("output %q", res.Output)
	}
	b, err := os.ReadFile(filepath.Join(dir, "escaped"))
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		t.Errorf("the escaped process %d is still there after the call: %v", pid, err)
	}
	closed = true
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if isSubreaper(t) {
		t.Error("still a subreaper after Close")
	}
}
