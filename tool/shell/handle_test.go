//go:build unix

package shell

import (
	"context"
	"testing"
)

// A background shell driven through its handle: its output is taken as
// it comes, its end reports the exit code, and Kill ends its tree.
func TestBackgroundHandle(t *testing.T) {
	e := newEnv(t)
	if _, ok := e.ts.Background("bash_1", "s1"); ok {
		t.Fatal("a shell before any was started")
	}
	e.call(Bash, BashArgs{Command: "printf 'one\\n'; echo two >&2; exit 3", RunInBackground: true})
	if _, ok := e.ts.Background("bash_1", "other"); ok {
		t.Fatal("another session's shell")
	}
	b, ok := e.ts.Background("bash_1", "s1")
	if !ok || b.ID() != "bash_1" {
		t.Fatalf("%v %v", b, ok)
	}
	<-b.Done()
	ended, code, sig := b.Exit()
	if !ended || code != 3 || sig != "" {
		t.Fatalf("exit %v %d %q", ended, code, sig)
	}
	out, dropped := b.Take(context.Background())
	if string(out) != "one\ntwo\n" || dropped != 0 {
		t.Fatalf("%q %d", out, dropped)
	}
	if out, _ := b.Take(context.Background()); len(out) != 0 {
		t.Fatalf("taken twice: %q", out)
	}

	e.call(Bash, BashArgs{Command: "sleep 1000 & echo $! > child; echo $$ > shell; wait", RunInBackground: true})
	child, shell := e.readPid("child"), e.readPid("shell")
	b, _ = e.ts.Background("bash_2", "s1")
	if ended, _, _ := b.Exit(); ended {
		t.Fatal("ended before it was killed")
	}
	if err := b.Kill(); err != nil {
		t.Fatal(err)
	}
	gone(t, child)
	gone(t, shell)
	if ended, code, sig := b.Exit(); !ended || sig != "SIGTERM" || code != 143 {
		t.Fatalf("after Kill: %v %d %q", ended, code, sig)
	}
}
