package agui

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/spawn"
)

// CancelWait bounds how long POST /sessions/{id}/cancel waits for the
// session's run to end before it answers.
const CancelWait = 10 * time.Second

// handleCancel answers POST /sessions/{id}/cancel (docs/control.md): the
// running session id (a child's subagentRunId, or a run's root session)
// is cancelled through pool.Pool.Cancel, by "agui": a child ends aborted
// with its subtree and its parent goes on; a root session's run ends. It
// answers {sessionId, cancelled: true} once the session's run has ended
// (at most CancelWait), 404 for an unknown session, 409 for one that is
// not running here.
func (s *Server) handleCancel(w http.ResponseWriter, r *http.Request) {
	sid := r.PathValue("id")
	done, err := s.pool.Cancel(r.Context(), sid, frontEnd)
	switch {
	case errors.Is(err, session.ErrNotFound):
		writeError(w, http.StatusNotFound, fmt.Sprintf("no session %q", sid))
		return
	case errors.Is(err, spawn.ErrNotRunning), errors.Is(err, spawn.ErrRunsElsewhere):
		writeError(w, http.StatusConflict, err.Error())
		return
	case err != nil:
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	t := time.NewTimer(CancelWait)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		s.log.Warn("agui: session did not end in time after its cancel", "session", sid)
	case <-r.Context().Done():
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"sessionId": sid, "cancelled": true})
}
