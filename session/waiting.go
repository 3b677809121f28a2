package session

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/agentpool/agentpool/approval"
	"github.com/agentpool/agentpool/event"
)

// A run whose process died while one of its tool calls waited for a
// person's answer (an approval request stored in the log of the session
// the tool runs in: docs/approvals.md, Durable) is not over: once the
// request is answered, the call can run (or get the rejection) and the
// run go on. FindWaiting reads such a tree from the store; a store's
// recovery leaves it running (it does not CloseInterrupted it), and
// pool.Pool.Continue goes on with it.

// maxWaitingDepth bounds the walk down a waiting tree (a tree deeper than
// any max_depth is not waited on).
const maxWaitingDepth = 64

// Waiting is a session of a stored tree whose run stopped while tool
// calls waited for answers: the session itself waits (Requests), or
// children it runs do (Children), or both.
type Waiting struct {
	Session Session
	// RunID is the session's run that stopped: its last run_started, with
	// no stream_complete or run_error after it.
	RunID string
	// Start is the spawn_session_start that started the session in its
	// parent's log (zero for the tree's top).
	Start event.SpawnSessionStart
	// Requests are the session's tool calls that wait for a person's
	// answer, by tool call id: the request stored for each, never
	// answered, and the call never completed.
	Requests map[string]approval.Request
	// Children are the session's children that wait, in the order they
	// started: each started in sync mode and never ended, by a tool call
	// that never completed (a task, worker or delegation call; none for
	// a team's member), and something in its own tree waits.
	Children []*Waiting
	// Results are the results the session's log has for its tool calls,
	// by tool call id: those calls ran, and do not run again.
	Results map[string]event.ToolCallComplete
	// Started are the spawn_session_start events of the session's log, in
	// order, and Ends the ends of those children that ended, by child
	// session id (a team's members: those that ended keep their result).
	Started []event.SpawnSessionStart
	Ends    map[string]event.SpawnSessionEnd

	open    openLog         // what the log left open (CloseRest)
	runKids map[string]bool // the children the stopped run started
}

// WaitsOn returns the waiting child started by tool call callID (nil:
// none).
func (w *Waiting) WaitsOn(callID string) *Waiting {
	for _, c := range w.Children {
		if callID != "" && c.Start.ToolCallID == callID {
			return c
		}
	}
	return nil
}

// FindWaiting returns the waiting tree of session id (nil when nothing in
// its tree waits for an answer). A tool call waits when its log has its
// tool_call_start and an approval_requested for it, but no
// approval_replied for that request and no tool_call_complete for the
// call; a session waits when its last run has not ended and one of its
// calls, or one of its open sync children, waits.
func FindWaiting(ctx context.Context, st Store, id string) (*Waiting, error) {
	s, err := st.GetSession(ctx, id)
	if err != nil {
		return nil, err
	}
	return findWaiting(ctx, st, s, 0)
}

func findWaiting(ctx context.Context, st Store, s Session, depth int) (*Waiting, error) {
	if depth > maxWaitingDepth {
		return nil, nil
	}
	recs, err := st.Events(ctx, s.ID, 0)
	if err != nil {
		return nil, err
	}
	l := readLog(recs)
	if l.run == nil {
		return nil, nil // its run ended
	}
	open := make(map[string]bool, len(l.calls))
	for _, c := range l.calls {
		open[c.ToolCallID] = true
	}
	w := &Waiting{Session: s, RunID: l.run.RunID, Results: l.results, Started: l.started, Ends: l.ends, open: l, runKids: runChildren(recs)}
	for callID, req := range openRequests(recs, s.ID) {
		if open[callID] {
			if w.Requests == nil {
				w.Requests = map[string]approval.Request{}
			}
			w.Requests[callID] = req
		}
	}
	for _, start := range l.children {
		if start.RunMode == event.RunModeAsync || (start.ToolCallID != "" && !open[start.ToolCallID]) {
			continue
		}
		child, err := st.GetSession(ctx, start.ChildSessionID)
		if err != nil || !unfinished(child) {
			continue // gone, or it ended (only its end was lost)
		}
		cw, err := findWaiting(ctx, st, child, depth+1)
		if err != nil {
			return nil, err
		}
		if cw != nil {
			cw.Start = start
			w.Children = append(w.Children, cw)
		}
	}
	if len(w.Requests) == 0 && len(w.Children) == 0 {
		return nil, nil
	}
	return w, nil
}

// runChildren are the children started in the last run of a log.
func runChildren(recs []Record) map[string]bool {
	kids := map[string]bool{}
	for _, r := range recs {
		switch e := r.Event.(type) {
		case event.RunStarted:
			clear(kids)
		case event.SpawnSessionStart:
			kids[e.ChildSessionID] = true
		}
	}
	return kids
}

// openRequests returns the approval requests of session sid's log that
// have no approval_replied, by the tool call they ask about.
func openRequests(recs []Record, sid string) map[string]approval.Request {
	var asked map[string]approval.Request
	answered := map[string]bool{}
	for _, r := range recs {
		if req, ok, err := approval.ParseRequested(r.Event); ok && err == nil && req.CallID != "" && req.SessionID == sid {
			if asked == nil {
				asked = map[string]approval.Request{}
			}
			asked[req.CallID] = req
			continue
		}
		if a, ok, err := approval.ParseReplied(r.Event); ok && err == nil {
			answered[a.RequestID] = true
		}
	}
	for callID, req := range asked {
		if answered[req.ID] {
			delete(asked, callID)
		}
	}
	return asked
}

// CloseRest closes, in every session of the waiting tree, what its run
// left open that does not wait, as CloseInterrupted would: each open
// child that does not wait is closed and ended (spawn_session_end, stop
// reason interrupted; added to Ends), each open tool call that neither waits for an
// answer nor for a waiting child gets the error result InterruptedResult
// (added to Results). The sessions stay running, their runs open, their
// waiting calls and children as they were: what goes on with the tree
// (pool.Pool.Continue) ends them. It is for a tree whose claim the
// caller holds.
func (w *Waiting) CloseRest(ctx context.Context, st Store) error {
	waits := map[string]bool{}
	kids := map[string]bool{}
	for _, c := range w.Children {
		kids[c.Session.ID] = true
		if c.Start.ToolCallID != "" {
			waits[c.Start.ToolCallID] = true
		}
	}
	for callID := range w.Requests {
		waits[callID] = true
	}
	var add []event.Event
	for _, start := range w.open.children {
		if kids[start.ChildSessionID] {
			continue
		}
		end, err := closeChild(ctx, st, w.Session.ID, start, interrupted)
		if err != nil {
			return fmt.Errorf("close child %s: %w", start.ChildSessionID, err)
		}
		w.Ends[start.ChildSessionID] = end
		add = append(add, end)
	}
	for _, c := range w.open.calls {
		if waits[c.ToolCallID] {
			continue
		}
		done := event.ToolCallComplete{
			ToolCallID: c.ToolCallID, ToolName: c.ToolName, ToolInput: c.RawInput,
			ToolResult: InterruptedResult, IsError: true, AgentName: w.Session.AgentName,
		}
		w.Results[c.ToolCallID] = done
		add = append(add, done)
	}
	if len(add) > 0 {
		if err := st.AppendEvents(ctx, w.Session.ID, add...); err != nil {
			return err
		}
	}
	w.open = openLog{}
	for _, c := range w.Children {
		if err := c.CloseRest(ctx, st); err != nil {
			return err
		}
	}
	return nil
}

// MetaRunSpent is the Metadata key under which a running session keeps
// the usage and cost of its run's model turns so far ({usage, cost}),
// written after each model turn that calls tools (before they run, so
// before any of them waits for an answer): the run that died while a call
// waited never wrote its totals, and the run that goes on with it
// (RunSpent) counts them again. The run's end removes it.
const MetaRunSpent = "run_spent"

// SetRunSpent records in s the usage and cost of its run so far.
func SetRunSpent(s *Session, u event.Usage, cost float64) {
	if s.Metadata == nil {
		s.Metadata = map[string]any{}
	}
	s.Metadata[MetaRunSpent] = map[string]any{"usage": u, "cost": cost}
}

// RunSpent is the usage and cost s's run had spent when it last recorded
// them (SetRunSpent); zero when it did not. A value that does not read
// as one counts as none.
func RunSpent(s Session) (event.Usage, float64) {
	v, ok := s.Metadata[MetaRunSpent]
	if !ok {
		return event.Usage{}, 0
	}
	b, err := json.Marshal(v)
	if err != nil {
		return event.Usage{}, 0
	}
	var spent struct {
		Usage event.Usage `json:"usage"`
		Cost  float64     `json:"cost"`
	}
	if json.Unmarshal(b, &spent) != nil || spent.Cost < 0 {
		return event.Usage{}, 0
	}
	return spent.Usage, spent.Cost
}

// EndedUsage is the usage and cost of the children that the stopped run
// started and that ended, as their ends carry them: their part of the
// session's totals, which the run that died never added up. A child that
// CloseRest closed as interrupted carries none (what it spent in the run
// that died is not known).
func (w *Waiting) EndedUsage() (event.Usage, float64) {
	var u event.Usage
	cost := 0.0
	for id := range w.runKids {
		if end, ok := w.Ends[id]; ok {
			if end.Usage != nil {
				u.Add(*end.Usage)
			}
			cost += end.Cost
		}
	}
	return u, cost
}
