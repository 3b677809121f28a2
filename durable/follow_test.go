package durable

import "testing"

// The notices ready when a poll is due are taken at once (the poll
// answers them all); a closed channel is given back as nil.
func TestDrainNotices(t *testing.T) {
	ch := make(chan string, 3)
	ch <- "a"
	ch <- "b"
	if got := drainNotices(ch); got == nil || len(ch) != 0 {
		t.Errorf("drainNotices left %d notices (channel %v)", len(ch), got)
	}
	ch <- "c"
	close(ch)
	if got := drainNotices(ch); got != nil {
		t.Error("a closed channel was given back")
	}
}
