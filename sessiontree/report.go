package sessiontree

import (
	"context"
	"slices"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/session"
)

// What the projection keeps of the tools' reports for front ends: the
// files a call touched, the changes it made and its machine fields (on
// the tool part's state), and each session's latest plan (the todo list
// TodoWrite keeps, as plan_update events). Live, they come with the
// Changes (PartUpdated, PlanUpdated); for a session whose run is no longer
// projected (it ended, or ran in an earlier process), LatestPlan and
// ToolReports read them back from the session's event log.

// planUpdate records a session's new plan and reports it.
func (a *applier) planUpdate(s *sess, ev event.PlanUpdate) {
	s.plan, s.planned = slices.Clone(ev.Entries), true
	if a.want {
		a.emit(PlanUpdated{SessionID: s.rec.ID, Entries: slices.Clone(ev.Entries)})
	}
}

// toolReport copies a finished call's report onto the state of its part.
func toolReport(st *ToolState, ev event.ToolCallComplete) {
	if len(ev.Locations) > 0 {
		st.Locations = ev.Locations
	}
	st.Diffs = ev.Diffs
	st.ToolMetadata = ev.Metadata
}

// cloneReport gives st its own copies of the report (a snapshot shares
// nothing with the projection).
func cloneReport(st *ToolState) {
	st.Locations = slices.Clone(st.Locations)
	st.Diffs = slices.Clone(st.Diffs)
	st.ToolMetadata = session.CloneMetadata(st.ToolMetadata)
}

// Plan returns the latest plan of a session and whether it has one: the
// projection's while its run is projected and has updated the plan, else
// the last plan_update of the session's event log (so it survives the
// end of the run and a restart of the process).
func (p *Projection) Plan(ctx context.Context, sessionID string) ([]event.PlanEntry, bool, error) {
	var plan []event.PlanEntry
	planned := false
	p.live(sessionID, func(s *sess) {
		if s.planned {
			plan, planned = slices.Clone(s.plan), true
		}
	})
	if planned {
		return plan, true, nil
	}
	if p.store == nil {
		return nil, false, nil
	}
	return LatestPlan(ctx, p.store, sessionID)
}

// LatestPlan returns the entries of the last plan_update in the event log
// of a session, and whether there is one.
func LatestPlan(ctx context.Context, st session.Store, sessionID string) ([]event.PlanEntry, bool, error) {
	recs, err := st.Events(ctx, sessionID, 0)
	if err != nil {
		return nil, false, err
	}
	for i := len(recs) - 1; i >= 0; i-- {
		if pu, ok := recs[i].Event.(event.PlanUpdate); ok {
			return slices.Clone(pu.Entries), true, nil
		}
	}
	return nil, false, nil
}

// ToolReport is what the event log of a session says of one tool call
// beyond the conversation: its title (tool_call_start's, or the latest
// tool_call_progress's) and, once it completed, the report of its
// tool_call_complete.
type ToolReport struct {
	Title     string
	Locations []event.Location
	Done      bool
	Diffs     []event.FileDiff
	Metadata  map[string]any
}

// ToolReports returns the tool calls of the event log of a session, by
// tool call id.
func ToolReports(ctx context.Context, st session.Store, sessionID string) (map[string]ToolReport, error) {
	recs, err := st.Events(ctx, sessionID, 0)
	if err != nil {
		return nil, err
	}
	out := map[string]ToolReport{}
	for _, r := range recs {
		switch ev := r.Event.(type) {
		case event.ToolCallStart:
			tr := out[ev.ToolCallID]
			tr.Title = ev.Title
			if len(ev.Locations) > 0 {
				tr.Locations = ev.Locations
			}
			out[ev.ToolCallID] = tr
		case event.ToolCallProgress:
			if tr, ok := out[ev.ToolCallID]; ok && ev.Title != "" && !tr.Done {
				tr.Title = ev.Title
				out[ev.ToolCallID] = tr
			}
		case event.ToolCallComplete:
			tr := out[ev.ToolCallID]
			if tr.Title == "" {
				tr.Title = ev.ToolName
			}
			if len(ev.Locations) > 0 {
				tr.Locations = ev.Locations
			}
			tr.Done, tr.Diffs, tr.Metadata = true, ev.Diffs, ev.Metadata
			out[ev.ToolCallID] = tr
		}
	}
	return out, nil
}
