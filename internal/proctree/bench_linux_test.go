package proctree

import (
	"os/exec"
	"testing"
)

// BenchmarkTree: what a tree costs a short command (/bin/true: start,
// wait, end), against a bare exec.Cmd, with a cgroup and with the /proc
// walk (which reads the environment of every process when this one is
// not a subreaper, of its children when it is).
func BenchmarkTree(b *testing.B) {
	b.Run("exec", func(b *testing.B) {
		for b.Loop() {
			if err := exec.Command("/bin/true").Run(); err != nil {
				b.Fatal(err)
			}
		}
	})
	run := func(b *testing.B) {
		for b.Loop() {
			tr := New(exec.Command("/bin/true"))
			if err := tr.Start(); err != nil {
				b.Fatal(err)
			}
			if err := tr.Wait(); err != nil {
				b.Fatal(err)
			}
			if tr.Alive() {
				b.Fatal("alive")
			}
			if err := tr.End(); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("cgroup", func(b *testing.B) {
		probe := New(exec.Command("/bin/true"))
		usable := probe.sys.cg != nil
		_ = probe.End()
		if !usable {
			b.Skip("no cgroup v2 hierarchy this process may write to")
		}
		run(b)
	})
	b.Run("walk", func(b *testing.B) {
		was := SetCgroups(false)
		defer SetCgroups(was)
		run(b)
	})
	b.Run("walk-subreaper", func(b *testing.B) {
		was := SetCgroups(false)
		defer SetCgroups(was)
		release, err := BecomeSubreaper(ReapTrees)
		if err != nil {
			b.Fatal(err)
		}
		defer release()
		run(b)
	})
}
