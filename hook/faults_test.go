package hook_test

import (
	"context"
	"errors"
	"testing"

	"github.com/agentpool/agentpool/agent"
	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/event/eventtest"
	"github.com/agentpool/agentpool/hook"
	"github.com/agentpool/agentpool/spawn"
)

// A skipped listener is recorded in the event log of the session its point
// fired for, as a hook_error custom event: in the live stream for points
// inside a run, in the store only for session/start and session/end.
func TestListenerFaultsAreRecorded(t *testing.T) {
	reg := hook.New(hook.Options{})
	reg.OnPreExecute.Use(func(context.Context, hook.ToolCall, hook.Next[hook.ToolCall, agent.ToolDecision]) agent.ToolDecision {
		panic("pre-execute exploded")
	}, hook.WithName("bad-seam"))
	reg.OnSubagentStart.Register(func(context.Context, hook.SubagentStart) error {
		return errors.New("start listener failed")
	}, hook.WithName("bad-start"))
	reg.OnSubagentEnd.Register(func(context.Context, hook.SubagentEnd) error {
		panic("end listener exploded")
	}, hook.WithName("bad-end"))
	h := newHarness(t, reg, spawn.Limits{})
	h.agent("child", scripted(t, text("child done")))
	h.agent("parent", scripted(t, callTurn("task", map[string]any{"agent_or_team": "child", "prompt": "x"}), text("parent done")), spawn.SubagentTools()...)
	res, root, evs := h.run(context.Background(), "parent", "go")
	if res.StopReason != event.StopCompleted || res.Output != "parent done" {
		t.Fatalf("run ended %s (%q): %v", res.StopReason, res.Output, res.Err)
	}
	if err := eventtest.CheckInvariants(root, evs); err != nil {
		t.Fatal(err)
	}
	faults := map[string]map[string]any{} // listener -> event_data
	for _, e := range evs {
		sid, inner := event.Unwrap(root, e)
		c, ok := inner.(event.Custom)
		if !ok || c.EventType != hook.EventHookError {
			continue
		}
		if sid != root {
			t.Errorf("fault of %v recorded in session %s, want the root %s", c.EventData["listener"], sid, root)
		}
		faults[c.EventData["listener"].(string)] = c.EventData
	}
	for listener, want := range map[string][2]string{
		"bad-seam":  {hook.PointPreExecute, "pre-execute exploded"},
		"bad-start": {hook.PointSubagentStart, "start listener failed"},
		"bad-end":   {hook.PointSubagentEnd, "end listener exploded"},
	} {
		f := faults[listener]
		if f == nil {
			t.Errorf("no hook_error for %s in the stream", listener)
			continue
		}
		if f["point"] != want[0] || f["error"] != want[1] {
			t.Errorf("hook_error of %s = %v, want point %s, error %q", listener, f, want[0], want[1])
		}
	}
	if err := reg.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// session/start and session/end fire outside the run's span: their faults
// go to the session's stored log, not to the stream.
func TestSessionFaultsGoToTheStore(t *testing.T) {
	reg := hook.New(hook.Options{})
	reg.OnSessionEnd.Register(func(context.Context, hook.SessionEnd) error {
		panic("session end exploded")
	}, hook.WithName("bad-session-end"))
	h := newHarness(t, reg, spawn.Limits{})
	h.agent("solo", scripted(t, text("done")))
	var out sink
	inv := h.root("solo", "go", &out)
	ctx := spawn.WithInvocation(context.Background(), inv)
	node, _ := h.rt.Lookup("solo")
	node.Run(ctx, inv)
	h.rt.Release(inv)
	reg.SessionEnd(ctx, inv.Session, event.StopCompleted, false)
	for _, e := range out.events() {
		if c, ok := e.(event.Custom); ok && c.EventType == hook.EventHookError {
			t.Errorf("session/end fault in the live stream: %v", c.EventData)
		}
	}
	recs, err := h.store.Events(context.Background(), inv.Session.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	found, stored := false, 0
	for _, r := range recs {
		if c, ok := r.Event.(event.Custom); ok && c.EventType == hook.EventHookError && c.EventData["point"] == hook.PointSessionEnd {
			found = c.EventData["error"] == "session end exploded" && c.EventData["kind"] == hook.FaultPanic
			stored++
		}
	}
	if !found {
		t.Errorf("no session/end hook_error in the stored log (%d records)", len(recs))
	}
	if stored != 1 {
		t.Errorf("the session/end hook_error is stored %d times, want once", stored)
	}
}
