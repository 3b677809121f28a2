package opencode

import (
	"fmt"
	"testing"

	"github.com/agentpool/agentpool/server/opencode/internal/wire"
)

// TestPartGrow: a part's text grows by its deltas; what was read before
// stays what it was (parts handed out are values); a part replaced between
// deltas continues from its new text; a part is copied once per read, not
// once per delta.
func TestPartGrow(t *testing.T) {
	text := func(v any) string { return v.(*wire.TextPart).Text }
	p := tpart{cur: &wire.TextPart{ID: "prt_1", Type: "text"}}
	p.grow("he")
	a := p.value()
	p.grow("l")
	p.grow("lo")
	b := p.value()
	if text(a) != "he" || text(b) != "hello" || b.(*wire.TextPart).ID != "prt_1" {
		t.Fatalf("values %q, %q; want he, hello", text(a), text(b))
	}
	if p.value() != b {
		t.Error("a part read twice without a delta between was copied again")
	}
	p.set(&wire.TextPart{ID: "prt_1", Type: "text", Text: "HELLO"}) // a part.updated
	p.grow("!")
	p.grow(" world")
	if c := p.value(); text(c) != "HELLO! world" || text(a) != "he" || text(b) != "hello" {
		t.Fatalf("after replace: %q (earlier %q %q)", text(c), text(a), text(b))
	}
	r := tpart{cur: &wire.ReasoningPart{ID: "prt_2", Type: "reasoning", Text: "x"}}
	r.grow("y")
	if got := r.value().(*wire.ReasoningPart).Text; got != "xy" {
		t.Errorf("reasoning part: %q", got)
	}
	tool := &wire.ToolPart{ID: "prt_3"}
	tp := tpart{cur: tool}
	tp.grow("ignored")
	if tp.value() != tool {
		t.Error("a tool part changed by a text delta")
	}
	if n := testing.AllocsPerRun(100, func() { p.grow("a") }); n > 0.1 {
		t.Errorf("a delta costs %.1f allocations, want none but the builder's growth", n)
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

// TestEvictionWhileAllRun: with more sessions running than MaxSessions no
// transcript can go, and the scan that found none is not repeated at
// every new transcript but after MaxSessions/8 of them; once the
// sessions are idle, that scan drops the oldest down to 7/8 of the bound.
func TestEvictionWhileAllRun(t *testing.T) {
	f := newSessionFacts(16)
	add := func(i int, busy bool) {
		st := f.ensure(fmt.Sprintf("s%d", i))
		st.busy.Store(busy)
		st.mu.Lock()
		f.touch(st, true)
		st.mu.Unlock()
	}
	for i := range 40 {
		add(i, true)
	}
	if n := f.transcripts(); n != 40 {
		t.Fatalf("%d transcripts of 40 running sessions, want all kept", n)
	}
	// Scans ran at the 17th, 19th, 21st, ... transcript: one per
	// MaxSessions/8 = 2 new ones, not one per new one.
	if got, want := f.rescanAt.Load(), int64(41); got != want {
		t.Fatalf("next scan at the %dth transcript, want %dth", got, want)
	}
	f.each(func(_ string, st *sessState) { st.busy.Store(false) })
	add(40, false)
	if n := f.transcripts(); n != 14 {
		t.Fatalf("%d transcripts after the sessions ended, want 14", n)
	}
}
