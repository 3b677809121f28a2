//go:build unix && !linux

package shell

import (
	"strings"
	"syscall"
	"testing"
	"time"
)

// Outside Linux a process that left the command's process group escapes
// it: the call does not wait for it to close the output.
func TestEscapedHolderDoesNotHang(t *testing.T) {
	e := newEnv(t)
	start := time.Now()
	r := e.call(Bash, BashArgs{Command: "setsid sh -c 'echo $$ > escaped; exec sleep 1000' & while [ ! -s escaped ]; do sleep 0.01; done; echo done"})
	pid := e.readPid("escaped")
	_ = syscall.Kill(pid, syscall.SIGKILL)
	gone(t, pid)
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("took %s", d)
	}
	if !strings.HasPrefix(r.Content, "done\n") || lastLine(r.Content) != "Exit code: 0" || !strings.Contains(r.Content, "kept its output open") {
		t.Fatalf("%q", r.Content)
	}
}
