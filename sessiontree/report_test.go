package sessiontree_test

import (
	"context"
	"reflect"
	"testing"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/sessiontree"
)

// TestToolReportsAndPlans: a tool part carries the tool's report
// (locations, diffs, metadata); a plan_update is a PlanUpdated change and
// the session's Plan, live and, once the run is released, from the event
// log, as ToolReports reads the reports back.
func TestToolReportsAndPlans(t *testing.T) {
	st, p, rec, _ := newHand(t)
	ctx := context.Background()
	const root = "ses_root"
	old := "a\n"
	loc := []event.Location{{Path: "/ws/f.txt", Line: 1}}
	plan := []event.PlanEntry{{Content: "Fix it", Priority: "medium", Status: "in_progress", ActiveForm: "Fixing it"}}
	for _, e := range []event.Event{
		event.RunStarted{SessionID: root, RunID: "run_1", AgentName: "root"},
		event.ToolCallStart{ToolCallID: "cal_1", ToolName: "Edit", Title: "Edit f.txt", RawInput: []byte(`{"file_path":"f.txt"}`), Locations: loc[:1:1]},
		event.ToolCallProgress{ToolCallID: "cal_1", Status: event.StatusInProgress, Title: "Editing f.txt"},
		event.ToolCallComplete{ToolCallID: "cal_1", ToolName: "Edit", ToolInput: []byte(`{"file_path":"f.txt"}`), ToolResult: "Edited",
			Locations: loc, Diffs: []event.FileDiff{{Path: "/ws/f.txt", OldText: &old, NewText: "b\n"}}, Metadata: map[string]any{"replacements": 1}},
		event.PlanUpdate{Entries: plan},
	} {
		p.Apply(ctx, root, e)
	}

	var part sessiontree.Part
	var updates []sessiontree.PlanUpdated
	for _, c := range rec.all() {
		switch v := c.(type) {
		case sessiontree.PartUpdated:
			if v.Part.CallID == "cal_1" {
				part = v.Part
			}
		case sessiontree.PlanUpdated:
			updates = append(updates, v)
		}
	}
	st0 := part.State
	if st0.Status != sessiontree.ToolCompleted || st0.Title != "Editing f.txt" || !reflect.DeepEqual(st0.Locations, loc) ||
		len(st0.Diffs) != 1 || *st0.Diffs[0].OldText != "a\n" || st0.Diffs[0].NewText != "b\n" || st0.ToolMetadata["replacements"] != 1 {
		t.Fatalf("tool state %+v", st0)
	}
	if len(updates) != 1 || updates[0].SessionID != root || !reflect.DeepEqual(updates[0].Entries, plan) {
		t.Fatalf("plan updates %+v", updates)
	}
	// Changes share nothing with the projection.
	updates[0].Entries[0].Status = "tampered"
	st0.ToolMetadata["replacements"] = 99
	got, ok, err := p.Plan(ctx, root)
	if err != nil || !ok || !reflect.DeepEqual(got, plan) {
		t.Fatalf("live plan %v %v %v", got, ok, err)
	}

	// The run ends: its projection is released; the log answers.
	p.Apply(ctx, root, event.StreamComplete{Message: event.Message{Role: "assistant", FinishReason: "stop"}})
	if got, ok, err := p.Plan(ctx, root); err != nil || !ok || !reflect.DeepEqual(got, plan) {
		t.Fatalf("stored plan %v %v %v", got, ok, err)
	}
	reports, err := sessiontree.ToolReports(ctx, st, root)
	if err != nil {
		t.Fatal(err)
	}
	r := reports["cal_1"]
	if len(reports) != 1 || !r.Done || r.Title != "Editing f.txt" || !reflect.DeepEqual(r.Locations, loc) || len(r.Diffs) != 1 || r.Metadata["replacements"] != 1 {
		t.Fatalf("reports %+v", reports)
	}
	if err := st.CreateSession(ctx, session.Session{ID: "ses_other"}); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := sessiontree.LatestPlan(ctx, st, "ses_other"); ok || err != nil {
		t.Fatalf("a session without a plan: %v %v", ok, err)
	}
	if _, ok, err := sessiontree.NewProjection(nil, nil).Plan(ctx, root); ok || err != nil {
		t.Fatalf("no store: %v %v", ok, err)
	}
}
