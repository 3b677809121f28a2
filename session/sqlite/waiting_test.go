package sqlite_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/agentpool/agentpool/approval"
	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/session/sqlite"
)

// The recovery of a dead store's sessions closes a run that stopped as
// interrupted, but leaves running, untouched, a run whose child waited for
// an approval when it stopped (session.FindWaiting): a process goes on
// with it (pool.Pool.Continue).
func TestRecoveryLeavesWaitingRuns(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "db.sqlite")
	st, err := sqlite.Open(path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// Two roots, each with a child whose Write asked; one request waits,
	// the other's process died before it was asked.
	for _, root := range []string{"waits", "stopped"} {
		kid := root + "-kid"
		for _, s := range []session.Session{
			{ID: root, AgentName: "lead", Status: session.StatusRunning, CreatedAt: time.Now()},
			{ID: kid, ParentID: root, Depth: 1, AgentName: "writer", Status: session.StatusRunning, CreatedAt: time.Now()},
		} {
			if err := st.CreateSession(ctx, s); err != nil {
				t.Fatal(err)
			}
		}
		evs := map[string][]event.Event{
			root: {event.RunStarted{SessionID: root, RunID: "r-" + root}, event.ToolCallStart{ToolCallID: "c1", ToolName: "task"},
				event.SpawnSessionStart{ChildSessionID: kid, ParentSessionID: root, ToolCallID: "c1", SpawnMechanism: event.MechanismTask,
					RunMode: event.RunModeSync, SourceName: "writer", SourceType: event.SourceAgent, Depth: 1}},
			kid: {event.RunStarted{SessionID: kid, RunID: "r-" + kid}, event.ToolCallStart{ToolCallID: "w1", ToolName: "Write"}},
		}
		if root == "waits" {
			evs[kid] = append(evs[kid], approval.RequestedEvent(approval.Request{ID: "per_1", SessionID: kid, Agent: "writer", Tool: "Write",
				CallID: "w1", Input: json.RawMessage(`{}`)}))
		}
		for id, e := range evs {
			if err := st.AppendEvents(ctx, id, e...); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Its store closed (the sessions' owner is no store any more), as a
	// process that ended without ending its runs.
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	again, err := sqlite.Open(path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if got := again.Recovered(); !slices.Equal(slices.Sorted(slices.Values(got)), []string{"stopped", "stopped-kid"}) {
		t.Errorf("Recovered: %v, want the stopped run's sessions only", got)
	}
	for id, want := range map[string]session.Status{"waits": session.StatusRunning, "waits-kid": session.StatusRunning,
		"stopped": session.StatusInterrupted, "stopped-kid": session.StatusInterrupted} {
		if s, err := again.GetSession(ctx, id); err != nil || s.Status != want {
			t.Errorf("%s: %s %v, want %s", id, s.Status, err, want)
		}
	}
	if recs, err := again.Events(ctx, "waits-kid", 0); err != nil || len(recs) != 3 {
		t.Errorf("the waiting child's log: %d events %v, want its 3 untouched", len(recs), err)
	}
	if w, err := session.FindWaiting(ctx, again, "waits"); err != nil || w == nil {
		t.Errorf("FindWaiting after the recovery: %+v %v", w, err)
	}
}
