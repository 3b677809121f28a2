package opencode

import (
	"fmt"
	"testing"
)

// TestPartGrow: a part's text grows by its deltas, earlier texts stay what
// they were (published parts are values), and a part replaced between
// deltas continues from its new text.
func TestPartGrow(t *testing.T) {
	var p tpart
	a := p.grow("", "he")
	b := p.grow(a, "llo")
	if a != "he" || b != "hello" {
		t.Fatalf("grow = %q, %q; want he, hello", a, b)
	}
	c := p.grow("HELLO", "!") // replaced by a part.updated of the same length
	d := p.grow(c, " world")
	if c != "HELLO!" || d != "HELLO! world" || a != "he" || b != "hello" {
		t.Fatalf("after replace: %q %q (earlier %q %q)", c, d, a, b)
	}
	if e := p.grow("x", "y"); e != "xy" {
		t.Fatalf("grow(x, y) = %q", e)
	}
}

// TestEvictionKeepsRecentAndRunning: past MaxSessions, the least recently
// used transcripts of idle sessions go, down to 7/8 of the bound; running
// sessions and the recently used ones stay.
func TestEvictionKeepsRecentAndRunning(t *testing.T) {
	f := newSessionFacts(16)
	f.ensure("s0").busy.Store(true)
	for i := range 17 {
		st := f.ensure(fmt.Sprintf("s%d", i))
		st.mu.Lock()
		f.touch(st, true)
		st.mu.Unlock()
	}
	if n := f.transcripts(); n != 14 {
		t.Fatalf("%d transcripts after 17 with MaxSessions 16, want 14", n)
	}
	for _, sid := range []string{"s0", "s4", "s16"} {
		if f.get(sid).trans == nil {
			t.Errorf("%s evicted", sid)
		}
	}
	for _, sid := range []string{"s1", "s2", "s3"} {
		if f.get(sid).trans != nil {
			t.Errorf("%s kept, the oldest idle ones go first", sid)
		}
	}
}
