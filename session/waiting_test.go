package session_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/agentpool/agentpool/approval"
	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/session/memory"
)

// waitingTree builds a run that stopped with: root → (c1) mid, which also
// had a call c3 open with a child busy, and a call c4 that completed;
// mid → (c2) writer, whose Write w1 waits for request per_1, whose Read
// w2 was answered (per_0) but never completed, and whose async child
// bg has a request of its own.
func waitingTree(t *testing.T) session.Store {
	t.Helper()
	ctx := context.Background()
	st := memory.New()
	mk := func(id, parent string, depth int) {
		t.Helper()
		if err := st.CreateSession(ctx, session.Session{ID: id, ParentID: parent, Depth: depth, AgentName: id, SourceType: event.SourceAgent,
			Status: session.StatusRunning, CreatedAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	start := func(parent, child, callID string, depth int, mode event.RunMode) event.SpawnSessionStart {
		return event.SpawnSessionStart{ChildSessionID: child, ParentSessionID: parent, ToolCallID: callID, SpawnMechanism: event.MechanismTask,
			RunMode: mode, SourceName: child, SourceType: event.SourceAgent, Depth: depth}
	}
	asked := func(id, sid, callID string) event.Event {
		return approval.RequestedEvent(approval.Request{ID: id, SessionID: sid, Agent: sid, Tool: "Write", CallID: callID, Input: json.RawMessage(`{}`)})
	}
	app := func(id string, evs ...event.Event) {
		t.Helper()
		if err := st.AppendEvents(ctx, id, evs...); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range []struct {
		id, parent string
		depth      int
	}{{"root", "", 0}, {"mid", "root", 1}, {"busy", "mid", 2}, {"writer", "mid", 2}, {"bg", "writer", 3}} {
		mk(s.id, s.parent, s.depth)
	}
	app("root", event.RunStarted{SessionID: "root", RunID: "r1"}, event.ToolCallStart{ToolCallID: "c1", ToolName: "task"},
		start("root", "mid", "c1", 1, event.RunModeSync))
	app("mid", event.RunStarted{SessionID: "mid", RunID: "r2"},
		event.ToolCallStart{ToolCallID: "c2", ToolName: "task"}, event.ToolCallStart{ToolCallID: "c3", ToolName: "task"},
		event.ToolCallStart{ToolCallID: "c4", ToolName: "Read"}, event.ToolCallComplete{ToolCallID: "c4", ToolName: "Read", ToolResult: "text"},
		start("mid", "writer", "c2", 2, event.RunModeSync), start("mid", "busy", "c3", 2, event.RunModeSync))
	app("busy", event.RunStarted{SessionID: "busy", RunID: "r3"}, event.ToolCallStart{ToolCallID: "b1", ToolName: "Bash"})
	app("writer", event.RunStarted{SessionID: "writer", RunID: "r4"},
		event.ToolCallStart{ToolCallID: "w1", ToolName: "Write"}, event.ToolCallStart{ToolCallID: "w2", ToolName: "Read"},
		event.ToolCallStart{ToolCallID: "w3", ToolName: "task"},
		asked("per_0", "writer", "w2"), approval.RepliedEvent("per_0", approval.Answer{Reply: approval.AllowOnce, By: "test"}),
		asked("per_1", "writer", "w1"),
		start("writer", "bg", "w3", 3, event.RunModeAsync), event.ToolCallComplete{ToolCallID: "w3", ToolName: "task", ToolResult: "{}"})
	app("bg", event.RunStarted{SessionID: "bg", RunID: "r5"}, event.ToolCallStart{ToolCallID: "g1", ToolName: "Write"}, asked("per_2", "bg", "g1"))
	return st
}

// FindWaiting follows the open sync delegations down to the calls whose
// request was never answered; CloseRest closes the rest as the recovery
// would (the busy child, the answered but unfinished Read, the async
// child) and leaves the waiting path open and running.
func TestFindWaiting(t *testing.T) {
	ctx := context.Background()
	st := waitingTree(t)
	w, err := session.FindWaiting(ctx, st, "root")
	if err != nil || w == nil {
		t.Fatalf("FindWaiting: %+v %v", w, err)
	}
	if w.RunID != "r1" || len(w.Requests) != 0 || len(w.Children) != 1 || w.WaitsOn("c1") == nil {
		t.Fatalf("root: %+v", w)
	}
	mid := w.WaitsOn("c1")
	if len(mid.Children) != 1 || mid.WaitsOn("c2") == nil || mid.WaitsOn("c3") != nil || mid.Results["c4"].ToolResult != "text" {
		t.Fatalf("mid: %+v", mid)
	}
	writer := mid.WaitsOn("c2")
	if len(writer.Requests) != 1 || writer.Requests["w1"].ID != "per_1" || len(writer.Children) != 0 || writer.Start.ChildSessionID != "writer" {
		t.Fatalf("writer: %+v (the answered request, and the async child's, do not wait)", writer)
	}

	for range 2 { // the second time adds nothing
		if err := w.CloseRest(ctx, st); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := kinds(t, st, "mid"), "run_started tool_call_start tool_call_start tool_call_start tool_call_complete spawn_session_start spawn_session_start spawn_session_end tool_call_complete"; got != want {
		t.Errorf("mid's log:\n got %s\nwant %s", got, want)
	}
	if r := mid.Results["c3"]; r.ToolResult != session.InterruptedResult || !r.IsError {
		t.Errorf("c3's result: %+v", r)
	}
	if end := mid.Ends["busy"]; end.StopReason != event.StopInterrupted {
		t.Errorf("busy's end: %+v", end)
	}
	if r := writer.Results["w2"]; r.ToolResult != session.InterruptedResult {
		t.Errorf("w2's result: %+v", r)
	}
	for id, want := range map[string]session.Status{"root": session.StatusRunning, "mid": session.StatusRunning, "writer": session.StatusRunning,
		"busy": session.StatusInterrupted, "bg": session.StatusInterrupted} {
		if s, _ := st.GetSession(ctx, id); s.Status != want {
			t.Errorf("%s is %s, want %s", id, s.Status, want)
		}
	}
	again, err := session.FindWaiting(ctx, st, "root")
	if err != nil || again == nil || again.WaitsOn("c1").WaitsOn("c2").Requests["w1"].ID != "per_1" {
		t.Fatalf("FindWaiting after CloseRest: %+v %v", again, err)
	}
}

// Nothing waits in a tree whose request was answered, whose waiting call
// completed, or whose run ended.
func TestFindWaitingNone(t *testing.T) {
	ctx := context.Background()
	for name, add := range map[string][]event.Event{
		"answered":  {approval.RepliedEvent("per_1", approval.Answer{Reply: approval.RejectOnce, By: "test"})},
		"completed": {event.ToolCallComplete{ToolCallID: "w1", ToolName: "Write", ToolResult: "done"}},
		"ended":     {event.RunError{Message: "gone", Code: "aborted"}},
	} {
		t.Run(name, func(t *testing.T) {
			st := waitingTree(t)
			if err := st.AppendEvents(ctx, "writer", add...); err != nil {
				t.Fatal(err)
			}
			if w, err := session.FindWaiting(ctx, st, "root"); err != nil || w != nil {
				t.Errorf("FindWaiting: %+v %v, want nothing", w, err)
			}
		})
	}
}

// EndedUsage counts the children of the stopped run that ended, not
// those of earlier runs; RunSpent reads
// what SetRunSpent recorded, through JSON as a store keeps it.
func TestWaitingSpent(t *testing.T) {
	ctx := context.Background()
	st := memory.New()
	for _, s := range []session.Session{
		{ID: "root", AgentName: "root", Status: session.StatusRunning},
		{ID: "old", ParentID: "root", Depth: 1, AgentName: "old", Status: session.StatusCompleted},
		{ID: "done", ParentID: "root", Depth: 1, AgentName: "done", Status: session.StatusCompleted},
		{ID: "open", ParentID: "root", Depth: 1, AgentName: "open", Status: session.StatusRunning, TotalUsage: event.Usage{InputTokens: 7}, TotalCost: 0.07},
	} {
		s.SourceType, s.CreatedAt = event.SourceAgent, time.Now()
		if err := st.CreateSession(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	start := func(child, call string) event.SpawnSessionStart {
		return event.SpawnSessionStart{ChildSessionID: child, ParentSessionID: "root", ToolCallID: call, SpawnMechanism: event.MechanismTask,
			RunMode: event.RunModeSync, SourceName: child, SourceType: event.SourceAgent, Depth: 1}
	}
	end := func(child, call string, in int64, cost float64) event.SpawnSessionEnd {
		return event.SpawnSessionEnd{ChildSessionID: child, ParentSessionID: "root", ToolCallID: call, SourceName: child,
			SourceType: event.SourceAgent, Depth: 1, StopReason: event.StopCompleted, Usage: &event.Usage{InputTokens: in}, Cost: cost}
	}
	if err := st.AppendEvents(ctx, "root",
		event.RunStarted{SessionID: "root", RunID: "r0"}, event.ToolCallStart{ToolCallID: "c0", ToolName: "task"}, start("old", "c0"),
		end("old", "c0", 100, 1), event.ToolCallComplete{ToolCallID: "c0", ToolName: "task"}, event.StreamComplete{},
		event.RunStarted{SessionID: "root", RunID: "r1"},
		event.ToolCallStart{ToolCallID: "c1", ToolName: "task"}, start("done", "c1"), end("done", "c1", 5, 0.05),
		event.ToolCallComplete{ToolCallID: "c1", ToolName: "task"},
		event.ToolCallStart{ToolCallID: "c2", ToolName: "task"}, start("open", "c2"),
		event.ToolCallStart{ToolCallID: "c3", ToolName: "Write"},
		approval.RequestedEvent(approval.Request{ID: "per_1", SessionID: "root", Agent: "root", Tool: "Write", CallID: "c3", Input: json.RawMessage(`{}`)}),
	); err != nil {
		t.Fatal(err)
	}
	w, err := session.FindWaiting(ctx, st, "root")
	if err != nil || w == nil {
		t.Fatalf("FindWaiting: %+v %v", w, err)
	}
	if err := w.CloseRest(ctx, st); err != nil {
		t.Fatal(err)
	}
	// The child closed as interrupted adds what its end carries: nothing
	// (its record's totals are its earlier runs'; what it spent in the
	// run that died is not counted: docs/approvals.md).
	if u, cost := w.EndedUsage(); u != (event.Usage{InputTokens: 5}) || cost != 0.05 {
		t.Errorf("EndedUsage: %+v %v, want the 5 input tokens and 0.05 of the child that ended in the stopped run", u, cost)
	}

	var s session.Session
	if u, cost := session.RunSpent(s); !u.IsZero() || cost != 0 {
		t.Errorf("RunSpent of nothing recorded: %+v %v", u, cost)
	}
	session.SetRunSpent(&s, event.Usage{InputTokens: 3, OutputTokens: 4}, 0.25)
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var back session.Session
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if u, cost := session.RunSpent(back); u != (event.Usage{InputTokens: 3, OutputTokens: 4}) || cost != 0.25 {
		t.Errorf("RunSpent after JSON: %+v %v", u, cost)
	}
	back.Metadata[session.MetaRunSpent] = "not spent"
	if u, cost := session.RunSpent(back); !u.IsZero() || cost != 0 {
		t.Errorf("RunSpent of a bad value: %+v %v, want nothing", u, cost)
	}
}
