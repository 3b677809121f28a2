//go:build !race

// The race detector makes sync.Pool drop items at random, so encoding/json
// allocates its encode state now and then under -race.

package acp

import "testing"

// Encoding a chunk allocates nothing once the writer's buffer has grown.
func TestItemEncoderAllocs(t *testing.T) {
	e := newItemEncoder()
	it := chunk("ses_7f3a9c0e21ffe6QmZ0bW1NKD3f9a", "token ")
	p := progress("ses_7f3a9c0e21ffe6QmZ0bW1NKD3f9a", "spawn:ses_1", "so far")
	e.add(&it)
	e.add(&p)
	if n := testing.AllocsPerRun(100, func() {
		e.reset()
		e.add(&it)
		e.add(&p)
	}); n != 0 {
		t.Errorf("%v allocs per chunk and progress update, want 0", n)
	}
}
