package files

import (
	"fmt"
	"testing"
)

func TestTrackerBound(t *testing.T) {
	tr := newTracker(3, 2)
	for _, s := range []string{"a", "b", "c"} {
		tr.set(s, "/f", readState{size: 1})
	}
	tr.get("a", "/f") // a is now the most recently used
	tr.set("d", "/f", readState{size: 4})
	if tr.len() != 3 {
		t.Fatalf("%d sessions", tr.len())
	}
	for s, want := range map[string]bool{"a": true, "b": false, "c": true, "d": true} {
		if _, ok := tr.get(s, "/f"); ok != want {
			t.Errorf("session %s remembered = %v, want %v", s, ok, want)
		}
	}
	// Files per session are bounded too.
	tr.set("a", "/g", readState{})
	tr.set("a", "/h", readState{})
	n := 0
	for _, p := range []string{"/f", "/g", "/h"} {
		if _, ok := tr.get("a", p); ok {
			n++
		}
	}
	if _, ok := tr.get("a", "/h"); !ok || n != 2 {
		t.Fatalf("%d files remembered (the newest must be)", n)
	}
}

func TestToolsetForgetsOldSessions(t *testing.T) {
	e := newEnv(t)
	e.file("f.txt", "x\n")
	e.ok(e.call(Read, "first", m{"file_path": "f.txt"}))
	for i := 0; i < maxSessions+10; i++ {
		e.ok(e.call(Read, fmt.Sprintf("ses_%d", i), m{"file_path": "f.txt"}))
	}
	if n := e.ts.tracker.len(); n != maxSessions {
		t.Fatalf("%d sessions remembered, want %d", n, maxSessions)
	}
	// The oldest session was forgotten: it must read again.
	e.fails(e.call(Edit, "first", m{"file_path": "f.txt", "old_string": "x", "new_string": "y"}), errNotRead)
	e.ok(e.call(Edit, fmt.Sprintf("ses_%d", maxSessions+9), m{"file_path": "f.txt", "old_string": "x", "new_string": "y"}))
}
