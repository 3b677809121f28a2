package opencode

import "testing"

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
