// Conformance tests of events: round trip and ordering.

package storetest

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/session"
)

// sampleEvents has one event of every kind.
func sampleEvents() []event.Event {
	return []event.Event{
		event.RunStarted{SessionID: "ses_1", RunID: "run_1", AgentName: "a", ParentSessionID: "ses_0"},
		event.PartStart{Index: 0, Part: event.Part{PartKind: event.PartText}},
		event.PartDelta{Index: 0, Delta: event.Delta{PartDeltaKind: event.PartText, ContentDelta: "héllo \"wörld\"\n"}},
		event.PartEnd{Index: 0},
		event.PartStart{Index: 1, Part: event.Part{PartKind: event.PartToolCall, ToolCallID: "cal_1", ToolName: "task"}},
		event.PartDelta{Index: 1, Delta: event.Delta{PartDeltaKind: event.PartToolCall, ArgsDelta: `{"a":`, ToolCallID: "cal_1"}},
		event.ToolCallStart{ToolCallID: "cal_1", ToolName: "task", Title: "task", ToolKind: "other", RawInput: json.RawMessage(`{"a":1}`)},
		event.ToolCallProgress{ToolCallID: "cal_1", Status: event.StatusInProgress, Items: []event.ProgressItem{{Type: "text", Content: "half"}}},
		event.SpawnSessionStart{ChildSessionID: "ses_2", ParentSessionID: "ses_1", ToolCallID: "cal_1", SpawnMechanism: event.MechanismTask,
			RunMode: event.RunModeSync, SourceName: "b", SourceType: event.SourceAgent, Depth: 1, Description: "d",
			Metadata: map[string]any{"prompt": "p", "max_depth": 5.0}, ModelID: "test"},
		event.Subagent{SourceName: "b", SourceType: event.SourceAgent, Depth: 1, ChildSessionID: "ses_2", ParentSessionID: "ses_1",
			ToolCallID: "cal_1", Path: []string{"ses_2"}, Event: event.PartDelta{Index: 0, Delta: event.Delta{PartDeltaKind: event.PartThinking, ContentDelta: "hm"}}},
		event.SpawnSessionEnd{ChildSessionID: "ses_2", ParentSessionID: "ses_1", ToolCallID: "cal_1", SourceName: "b", SourceType: event.SourceAgent,
			Depth: 1, StopReason: event.StopError, Error: "boom", Usage: &event.Usage{InputTokens: 1, OutputTokens: 2}, Cost: 0.25, DurationMS: 10},
		event.ToolCallComplete{ToolCallID: "cal_1", ToolName: "task", ToolInput: json.RawMessage(`{"a":1}`), ToolResult: "r", IsError: true, AgentName: "a"},
		event.PlanUpdate{Entries: []event.PlanEntry{{Content: "c", Priority: "high", Status: "pending"}}},
		event.Custom{EventType: "hook", EventData: map[string]any{"x": "y"}, Source: "s"},
		event.RunError{Message: "m", Code: "c", RunID: "run_1", AgentName: "a"},
		event.StreamComplete{Message: event.Message{Role: "assistant", Content: "done", Usage: event.Usage{InputTokens: 3}, Cost: 0.5, Model: "test", FinishReason: "stop"}},
	}
}

func marshal(t *testing.T, e event.Event) string {
	t.Helper()
	b, err := event.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func testEventsRoundTrip(t *testing.T, st session.Store) {
	ctx := context.Background()
	mustCreate(t, st, newSession("ses_1", "", 0, base))
	evs := sampleEvents()
	before := time.Now().Add(-time.Second)
	if err := st.AppendEvents(ctx, "ses_1", evs[:3]...); err != nil {
		t.Fatal(err)
	}
	for _, e := range evs[3:] {
		if err := st.AppendEvents(ctx, "ses_1", e); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.AppendEvents(ctx, "ses_1"); err != nil {
		t.Fatalf("appending no events: %v", err)
	}
	if err := st.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	recs, err := st.Events(ctx, "ses_1", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != len(evs) {
		t.Fatalf("%d records, want %d", len(recs), len(evs))
	}
	for i, r := range recs {
		if r.SessionID != "ses_1" || r.Seq != int64(i+1) {
			t.Errorf("record %d: session %q seq %d", i, r.SessionID, r.Seq)
		}
		if i > 0 && r.GlobalSeq <= recs[i-1].GlobalSeq {
			t.Errorf("record %d: global seq %d after %d", i, r.GlobalSeq, recs[i-1].GlobalSeq)
		}
		if r.Time.Before(before) || r.Time.After(time.Now().Add(time.Second)) {
			t.Errorf("record %d: time %v", i, r.Time)
		}
		if g, w := marshal(t, r.Event), marshal(t, evs[i]); g != w {
			t.Errorf("record %d:\n got %s\nwant %s", i, g, w)
		}
	}
	tail, err := st.Events(ctx, "ses_1", 13)
	if err != nil || len(tail) != 3 || tail[0].Seq != 14 {
		t.Errorf("Events after 13 = %d records (first %+v), %v", len(tail), tail, err)
	}
	none, err := st.Events(ctx, "ses_1", int64(len(evs)))
	if err != nil || len(none) != 0 {
		t.Errorf("Events after the last = %v, %v", none, err)
	}
	all, err := st.Events(ctx, "ses_1", -5)
	if err != nil || len(all) != len(evs) {
		t.Errorf("Events after -5 = %d, %v", len(all), err)
	}
	if err := st.AppendEvents(ctx, "ses_1", nil); err == nil {
		t.Error("appending a nil event succeeded")
	}
	if err := st.AppendEvents(ctx, "ses_1", event.Subagent{Path: []string{"x"}}); err == nil {
		t.Error("appending a subagent event that wraps nothing succeeded")
	}
	if err := st.Flush(ctx); err != nil {
		t.Fatalf("Flush after rejected appends: %v", err)
	}
	recs, _ = st.Events(ctx, "ses_1", 0)
	if len(recs) != len(evs) {
		t.Errorf("rejected appends stored something: %d records", len(recs))
	}
}

func testEventsOrdering(t *testing.T, st session.Store) {
	ctx := context.Background()
	mustCreate(t, st, newSession("ses_a", "", 0, base))
	mustCreate(t, st, newSession("ses_b", "ses_a", 1, base))
	// Interleave appends to two sessions; the store-wide order is the
	// append order.
	type app struct {
		sid string
		idx int
	}
	var order []app
	for i := range 100 {
		sid := "ses_a"
		if i%3 == 1 {
			sid = "ses_b"
		}
		if err := st.AppendEvents(ctx, sid, event.PartEnd{Index: i}); err != nil {
			t.Fatal(err)
		}
		order = append(order, app{sid, i})
	}
	var merged []session.Record
	for _, sid := range []string{"ses_a", "ses_b"} {
		recs, err := st.Events(ctx, sid, 0)
		if err != nil {
			t.Fatal(err)
		}
		for i, r := range recs {
			if r.Seq != int64(i+1) {
				t.Fatalf("%s record %d has seq %d", sid, i, r.Seq)
			}
		}
		merged = append(merged, recs...)
	}
	if len(merged) != len(order) {
		t.Fatalf("%d records, want %d", len(merged), len(order))
	}
	byGlobal := map[int64]session.Record{}
	for _, r := range merged {
		if _, dup := byGlobal[r.GlobalSeq]; dup {
			t.Fatalf("global seq %d used twice", r.GlobalSeq)
		}
		byGlobal[r.GlobalSeq] = r
	}
	sortRecords(merged)
	for i, r := range merged {
		if r.SessionID != order[i].sid || r.Event.(event.PartEnd).Index != order[i].idx {
			t.Fatalf("position %d in global order: %s %d, want %s %d", i, r.SessionID, r.Event.(event.PartEnd).Index, order[i].sid, order[i].idx)
		}
	}
}

func sortRecords(rs []session.Record) {
	for i := 1; i < len(rs); i++ {
		for j := i; j > 0 && rs[j].GlobalSeq < rs[j-1].GlobalSeq; j-- {
			rs[j], rs[j-1] = rs[j-1], rs[j]
		}
	}
}
