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

// NewSeededFrom names the n-th item alike whatever came before it, and in
// the order of n: its ids take the time parts a generator made at one
// time hands out one after the other.
func TestNewSeededFrom(t *testing.T) {
	at := time.UnixMilli(1_700_000_000_000)
	seq := NewSeeded([32]byte{9})
	var prev string
	for n := range 5000 { // past a millisecond's 4096 counts
		g := NewSeededFrom([32]byte{byte(n), byte(n >> 8)}, at, n)
		x := g.AscendingAt(Run, at)
		if y := NewSeededFrom([32]byte{byte(n), byte(n >> 8)}, at, n).AscendingAt(Run, at); x != y {
			t.Fatalf("item %d: %s, then %s", n, x, y)
		}
		// The time part is the one the n-th id made at at has.
		if want := seq.AscendingAt(Run, at); x[:len(Run)+1+hexLen] != want[:len(Run)+1+hexLen] {
			t.Fatalf("item %d: %s, want the time part of %s", n, x, want)
		}
		if x <= prev {
			t.Fatalf("item %d: %s does not sort after %s", n, x, prev)
		}
		prev = x
		// The generator goes on from there, in order.
		if next := g.AscendingAt(Run, at); next <= x {
			t.Fatalf("item %d: next id %s does not sort after %s", n, next, x)
		}
	}
}
