package id

import (
	"testing"
	"time"
)

// Two generators with one seed, given the same times, hand out the same
// ids (a replayed workflow makes the ids it made the first time); another
// seed gives others.
func TestNewSeededIsDeterministic(t *testing.T) {
	at := time.UnixMilli(1_700_000_000_000)
	a, b, c := NewSeeded([32]byte{1}), NewSeeded([32]byte{1}), NewSeeded([32]byte{2})
	for i := range 300 { // past one refill of the random buffer
		now := at.Add(time.Duration(i/3) * time.Millisecond)
		x, y, z := a.AscendingAt(Message, now), b.AscendingAt(Message, now), c.AscendingAt(Message, now)
		if x != y {
			t.Fatalf("id %d: %s != %s", i, x, y)
		}
		if x == z {
			t.Fatalf("id %d: seeds 1 and 2 both gave %s", i, x)
		}
		if d1, d2 := a.DescendingAt(Session, now), b.DescendingAt(Session, now); d1 != d2 {
			t.Fatalf("descending id %d: %s != %s", i, d1, d2)
		}
	}
}
