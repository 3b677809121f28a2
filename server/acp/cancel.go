package acp

import (
	"encoding/json"
	"errors"

	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/spawn"
)

// Cancelling one child session (docs/control.md): the extension method
// _agentpool/session/cancel {sessionId} (a request, answered {}, or a
// notification), and session/cancel with the id of a child rather than of
// a session the editor opened. The child must belong to a session of this
// connection (a descendant of one); it and its subtree end aborted, its
// spawn tool call fails with the words of the cancellation, and the
// parent's run goes on. Only the session's own run is a prompt's: its
// cancel stays session/cancel's.

// methodAgentpoolCancel is the extension method that cancels one session.
const methodAgentpoolCancel = "_agentpool/session/cancel"

// maxLineage bounds the walk up a child's ancestors (deeper than any
// max_depth a manifest may set).
const maxLineage = 64

// extCancel answers _agentpool/session/cancel.
func (c *conn) extCancel(params json.RawMessage) (any, *rpcError) {
	var p struct {
		SessionID string `json:"sessionId"`
	}
	if err := decodeParams(params, &p); err != nil {
		return nil, err
	}
	if p.SessionID == "" {
		return nil, invalidParams("sessionId is required")
	}
	c.mu.Lock()
	open := c.sessions[p.SessionID] != nil
	c.mu.Unlock()
	if open {
		// The editor's own session: its prompt, as session/cancel.
		c.cancelSession(params)
		return struct{}{}, nil
	}
	if err := c.cancelChild(p.SessionID); err != nil {
		return nil, err
	}
	return struct{}{}, nil
}

// cancelChild cancels a running descendant of one of the connection's
// sessions. The answer does not wait for the child's end: that arrives as
// its spawn tool call's update.
func (c *conn) cancelChild(sid string) *rpcError {
	if !c.inTree(sid) {
		return sessionNotFound(sid)
	}
	_, err := c.s.pool.Cancel(c.ctx, sid, frontEnd)
	switch {
	case err == nil:
		c.log.Info("acp: cancel a child session", "session", sid)
		return nil
	case errors.Is(err, session.ErrNotFound):
		return sessionNotFound(sid)
	case errors.Is(err, spawn.ErrNotRunning), errors.Is(err, spawn.ErrRunsElsewhere):
		return errorf(codeInvalidRequest, "%v", err)
	}
	return errorf(codeInternalError, "Internal error: %v", err)
}

// inTree reports whether sid is a descendant of a session open on this
// connection: an editor cancels its own runs' children, no one else's.
func (c *conn) inTree(sid string) bool {
	store := c.s.pool.Store()
	rec, err := store.GetSession(c.ctx, sid)
	for i := 0; err == nil && rec.ParentID != "" && i < maxLineage; i++ {
		c.mu.Lock()
		open := c.sessions[rec.ParentID] != nil
		c.mu.Unlock()
		if open {
			return true
		}
		rec, err = store.GetSession(c.ctx, rec.ParentID)
	}
	return false
}
