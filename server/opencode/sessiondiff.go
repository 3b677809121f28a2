package opencode

import (
	"net/http"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/server/opencode/internal/wire"
)

// handleSessionDiff answers GET /session/{id}/diff: every file the
// session's own tool calls changed (the diffs of its tool_call_complete
// events, from the event log), each as one patch from the file's text
// before the first change to its text after the last, in the order the
// files were first changed. Changes made by child sessions are in their
// own session's diff. The messageID filter is not supported: the whole
// session's changes are answered.
func (s *sessionsAPI) handleSessionDiff(w http.ResponseWriter, r *http.Request) {
	sid := r.PathValue("sessionID")
	ctx := r.Context()
	if _, err := s.store.GetSession(ctx, sid); err != nil {
		storeError(w, sid, err)
		return
	}
	recs, err := s.store.Events(ctx, sid, 0)
	if err != nil {
		storeError(w, sid, err)
		return
	}
	type change struct {
		old *string // nil: the first call created the file
		new string
	}
	changes := map[string]*change{}
	var order []string
	for _, rec := range recs {
		c, ok := rec.Event.(event.ToolCallComplete)
		if !ok {
			continue
		}
		for _, d := range c.Diffs {
			ch := changes[d.Path]
			if ch == nil {
				ch = &change{old: d.OldText}
				changes[d.Path] = ch
				order = append(order, d.Path)
			}
			ch.new = d.NewText
		}
	}
	out := make([]wire.SnapshotFileDiff, 0, len(order))
	for _, path := range order {
		ch := changes[path]
		old, status := "", "added"
		if ch.old != nil {
			old, status = *ch.old, "modified"
		}
		if old == ch.new && ch.old != nil {
			continue // changed back
		}
		patch, add, del := unifiedDiff(path, old, ch.new)
		out = append(out, wire.SnapshotFileDiff{File: path, Patch: patch, Additions: add, Deletions: del, Status: status})
	}
	writeJSON(w, http.StatusOK, out)
}
