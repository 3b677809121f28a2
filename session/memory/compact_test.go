package memory_test

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/session/memory"
)

// The store keeps text and thinking deltas compact (their text in a buffer
// of the session) and every other event as it came: Events gives each one
// back equal to what was appended, in order, with its own seq, also when
// read from the middle of the log.
func TestEventsCompactDeltas(t *testing.T) {
	ctx := context.Background()
	st := memory.New()
	if err := st.CreateSession(ctx, session.Session{ID: "ses_c"}); err != nil {
		t.Fatal(err)
	}
	text := func(i int, s string) event.Event {
		return event.PartDelta{Index: i, Delta: event.Delta{PartDeltaKind: event.PartText, ContentDelta: s}}
	}
	in := []event.Event{
		event.PartStart{Index: 0, Part: event.Part{PartKind: event.PartText}},
		text(0, "héllo "),
		text(0, ""),
		text(0, "wörld\n"),
		event.PartDelta{Index: 1, Delta: event.Delta{PartDeltaKind: event.PartThinking, ContentDelta: "hm"}},
		// Kept as they came: arguments, a tool call id, a kind of no
		// compact form, an index out of its range.
		event.PartDelta{Index: 2, Delta: event.Delta{PartDeltaKind: event.PartToolCall, ArgsDelta: `{"a":`, ToolCallID: "cal_1"}},
		event.PartDelta{Index: 2, Delta: event.Delta{PartDeltaKind: event.PartText, ContentDelta: "x", ToolCallID: "cal_1"}},
		event.PartDelta{Index: 3, Delta: event.Delta{PartDeltaKind: "other", ContentDelta: "y"}},
		text(math.MaxInt32+1, "z"),
		text(-1, "neg"),
		event.PartEnd{Index: 0},
		text(0, "after"),
	}
	l, err := st.EventLog(ctx, "ses_c")
	if err != nil {
		t.Fatal(err)
	}
	if err := l.AppendEvents(in[:5]...); err != nil {
		t.Fatal(err)
	}
	if err := st.AppendEvents(ctx, "ses_c", in[5:]...); err != nil {
		t.Fatal(err)
	}
	for _, after := range []int{0, 3, len(in) - 1} {
		recs, err := st.Events(ctx, "ses_c", int64(after))
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) != len(in)-after {
			t.Fatalf("after %d: %d records, want %d", after, len(recs), len(in)-after)
		}
		for i, r := range recs {
			want := in[after+i]
			if r.Seq != int64(after+i+1) || r.Event != want {
				t.Errorf("after %d, record %d: seq %d %#v, want seq %d %#v", after, i, r.Seq, r.Event, after+i+1, want)
			}
		}
	}
}

// A long log keeps every event as appended across the blocks it is kept
// in: deltas whose text does not fit what is left of a block, and one
// longer than a block (kept as it came).
func TestEventsManyDeltas(t *testing.T) {
	ctx := context.Background()
	st := memory.New()
	if err := st.CreateSession(ctx, session.Session{ID: "ses_m"}); err != nil {
		t.Fatal(err)
	}
	var in []event.Event
	for i := range 500 {
		var e event.Event = event.PartDelta{Index: i % 3, Delta: event.Delta{PartDeltaKind: event.PartText, ContentDelta: strings.Repeat(string(rune('a'+i%26)), 1+i*7%150)}}
		switch {
		case i == 250:
			e = event.PartDelta{Index: 1, Delta: event.Delta{PartDeltaKind: event.PartThinking, ContentDelta: strings.Repeat("x", 3000)}}
		case i%50 == 0:
			e = event.PartEnd{Index: i}
		}
		in = append(in, e)
		if err := st.AppendEvents(ctx, "ses_m", e); err != nil {
			t.Fatal(err)
		}
	}
	recs, err := st.Events(ctx, "ses_m", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != len(in) {
		t.Fatalf("%d records, want %d", len(recs), len(in))
	}
	for i, r := range recs {
		if r.Seq != int64(i+1) || r.Event != in[i] {
			t.Fatalf("record %d: seq %d %#v, want %#v", i, r.Seq, r.Event, in[i])
		}
	}
}
