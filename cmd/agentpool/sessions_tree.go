package main

import (
	"context"
	"time"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/internal/treeview"
	"github.com/agentpool/agentpool/session"
)

// renderStoredTree draws a stored session's delegation tree with the
// renderer of `agentpool run`'s live view: its merged event log is
// replayed into the tree model (at the times the events were stored), and
// a session that is no longer running is finished as its record says.
// Every session is listed (finished ones expanded) with its id, so that
// it can be opened; large fan-outs are still counted, not listed.
func renderStoredTree(ctx context.Context, st session.Store, s session.Session, now time.Time) (string, error) {
	recs, err := session.ReplayTree(ctx, st, s.ID)
	if err != nil {
		return "", err
	}
	m := treeview.New(s.CreatedAt)
	m.Apply(event.RunStarted{SessionID: s.ID, AgentName: s.AgentName}, s.CreatedAt)
	for _, r := range recs {
		m.Apply(r.Event, r.Record.Time)
	}
	if s.Status != session.StatusRunning {
		sum := treeview.Summary{SessionID: s.ID, Stop: storedStop(s), Usage: s.TotalUsage, Cost: s.TotalCost,
			Duration: time.Duration(s.DurationMS) * time.Millisecond}
		if e, ok := s.Metadata["error"].(string); ok {
			sum.Err = e
		}
		m.Finish(sum, s.UpdatedAt)
		now = s.UpdatedAt
	}
	return m.Render(treeview.Options{Now: now, Expand: true, IDs: true}), nil
}

// storedStop is the stop reason a stored session ended with; one left
// interrupted by a process that died counts as aborted.
func storedStop(s session.Session) event.StopReason {
	if s.StopReason != "" {
		return s.StopReason
	}
	switch s.Status {
	case session.StatusError:
		return event.StopError
	case session.StatusAborted, session.StatusInterrupted:
		return event.StopAborted
	}
	return event.StopCompleted
}
