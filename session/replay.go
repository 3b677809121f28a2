package session

import (
	"context"
	"slices"

	"github.com/agentpool/agentpool/event"
)

// Replayed is one event of a subtree replay: the stored record (whose
// Event is the event as its session produced it) and Event, the event as
// the root's consumer saw it live (wrapped once for a descendant).
type Replayed struct {
	Record Record
	Event  event.Event
}

// ReplayTree merges the event logs of rootID's subtree into the one stream
// rootID's consumer saw live: every event in store-wide order (GlobalSeq),
// those of descendants wrapped once in a subagent event relative to rootID
// (docs/spec/EVENTS.md invariant 5): child_session_id the producing session,
// parent_session_id its parent, depth its depth, path the ids from
// rootID's child down to it, tool_call_id the call that spawned it.
func ReplayTree(ctx context.Context, st Store, rootID string) ([]Replayed, error) {
	all, err := Subtree(ctx, st, rootID)
	if err != nil {
		return nil, err
	}
	byID := make(map[string]Session, len(all))
	var recs []Record
	toolCall := map[string]string{} // child -> the tool call that spawned it
	for _, s := range all {
		byID[s.ID] = s
		rs, err := st.Events(ctx, s.ID, 0)
		if err != nil {
			return nil, err
		}
		for _, r := range rs {
			if sp, ok := r.Event.(event.SpawnSessionStart); ok {
				if _, seen := toolCall[sp.ChildSessionID]; !seen {
					toolCall[sp.ChildSessionID] = sp.ToolCallID
				}
			}
		}
		recs = append(recs, rs...)
	}
	sortByGlobalSeq(recs)
	paths := map[string][]string{rootID: nil}
	var pathOf func(id string) []string
	pathOf = func(id string) []string {
		if p, ok := paths[id]; ok {
			return p
		}
		s := byID[id]
		p := append(slices.Clone(pathOf(s.ParentID)), id)
		paths[id] = p
		return p
	}
	out := make([]Replayed, 0, len(recs))
	for _, r := range recs {
		if r.SessionID == rootID {
			out = append(out, Replayed{Record: r, Event: r.Event})
			continue
		}
		s := byID[r.SessionID]
		out = append(out, Replayed{Record: r, Event: wrapDescendant(event.Subagent{
			SourceName: s.AgentName, SourceType: s.SourceType, Depth: s.Depth,
			ChildSessionID: s.ID, ParentSessionID: s.ParentID, ToolCallID: toolCall[s.ID],
			Path: slices.Clone(pathOf(s.ID)),
		}, r.Event)})
	}
	return out, nil
}
