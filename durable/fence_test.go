package durable

import (
	"errors"
	"testing"
)

// A turn's write in flight when its run ends goes first; after the end
// the run's turns write nothing; the fence forgets a run once its turns
// left; another run of the session is not fenced by that end.
func TestFenceKeepsTurnWritesBeforeTheEnd(t *testing.T) {
	var f turnFence
	k := runKey{"ses_1", "run_1"}
	r, leave := f.enter(k)
	writing, ended := make(chan struct{}), make(chan struct{})
	var order []string
	go func() {
		<-writing
		f.end(k)
		order = append(order, "end") // after the write: end waited for it
		close(ended)
	}()
	err := r.write(func() error {
		close(writing)
		order = append(order, "write")
		return nil
	})
	<-ended
	if err != nil || len(order) != 2 || order[0] != "write" {
		t.Fatalf("write in flight: %v, order %v", err, order)
	}
	wrote := false
	if err := r.write(func() error { wrote = true; return nil }); !errors.Is(err, errRunEnded) || wrote {
		t.Fatalf("a write after the end: %v (ran %v)", err, wrote)
	}
	other, leaveOther := f.enter(runKey{"ses_1", "run_2"})
	if err := other.write(func() error { return nil }); err != nil {
		t.Fatalf("the session's next run fenced by the last one's end: %v", err)
	}
	leaveOther()
	leave()
	if n := len(f.runs); n != 0 {
		t.Fatalf("%d runs kept after their turns left", n)
	}
	f.end(k) // a run without turns in flight: nothing to fence
	if n := len(f.runs); n != 0 {
		t.Fatalf("end kept %d runs", n)
	}
}
