package acp

import (
	"context"

	"github.com/agentpool/agentpool/hook"
)

// UseHooks keeps the root sessions of reg's hooks in step with ACP
// sessions: the runs of a session's prompts are one session for them
// (pool.RunRequest.KeepSession), so that session/start fires at its first
// prompt and session/end when the session is closed (session/close) or the
// connection ends (hook.CauseClosed, hook.CauseDisconnected), not around
// every prompt. Approvals are not the hooks' business here: they go
// through the broker (Options.Approvals).
func (s *Server) UseHooks(reg *hook.Registry) {
	s.hooks.Store(reg)
}

// keepsSessions reports whether the runs of a session's prompts are one
// session for the hooks (UseHooks).
func (s *Server) keepsSessions() bool { return s.hooks.Load() != nil }

// endSession tells the hooks (UseHooks) that an ACP session ended.
func (s *Server) endSession(sessionID, cause string) {
	if reg := s.hooks.Load(); reg != nil {
		reg.EndSession(context.Background(), sessionID, cause)
	}
}

// endSessions ends every session still open on the connection (its end).
func (c *conn) endSessions(cause string) {
	c.mu.Lock()
	ids := make([]string, 0, len(c.sessions))
	for id := range c.sessions {
		ids = append(ids, id)
	}
	c.mu.Unlock()
	for _, id := range ids {
		c.s.endSession(id, cause)
	}
}
