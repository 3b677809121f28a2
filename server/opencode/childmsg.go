package opencode

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/agentpool/agentpool/session"
)

// maxAncestors bounds the walk of runningAncestor (deeper than any
// max_depth a pool allows).
const maxAncestors = 64

// runningAncestor returns the nearest ancestor of rec that runs in this
// server's pool, "" when none does.
func (s *promptsAPI) runningAncestor(ctx context.Context, rec session.Session) string {
	for i := 0; i < maxAncestors && rec.ParentID != ""; i++ {
		if s.pool.Runtime().Running(rec.ParentID) {
			return rec.ParentID
		}
		var err error
		if rec, err = s.store.GetSession(ctx, rec.ParentID); err != nil {
			return ""
		}
	}
	return ""
}

// messageChild delivers a prompt to a child session that runs in its
// root's run, in this process or on the pool's engine (docs/control.md): the child's model reads it at its next
// turn, and the child's transcript shows it as a user message when it
// does (the projection's part of the session_message event). prompt_async
// answers 204 once it is queued; /message (wait) waits for the child's
// run to end and answers its last assistant message, as a prompt of the
// session's own would. A child that ended meanwhile is busy (409): its
// tree's run holds it; prompt it again once that run is over, which
// continues it.
func (s *promptsAPI) messageChild(w http.ResponseWriter, r *http.Request, p *prompt, wait bool) {
	defer s.budget.release(p.hold)
	ctx := r.Context()
	var ended <-chan struct{}
	if wait {
		ended, _ = s.pool.Ended(ctx, p.sid)
	}
	if err := s.pool.Message(ctx, p.sid, answeredBy(r), p.text); err != nil {
		s.log.Debug("opencode: message a child", "session", p.sid, "err", err)
		busy(w, p.sid)
		return
	}
	if !wait {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	if ended != nil {
		select {
		case <-ended:
		case <-ctx.Done():
			return
		}
	}
	s.streams.awaitDelivery(ctx, p.sid)
	var out json.RawMessage
	if st := s.facts.get(p.sid); st != nil {
		st.mu.Lock()
		if t := st.trans; t != nil {
			if m := t.lastAssistant(); m != nil {
				out, _ = json.Marshal(m.withParts(nil))
			}
		}
		st.mu.Unlock()
	}
	if out == nil {
		out = s.emptyAnswer(p, "", "the child ended without an answer", false)
	}
	writeRaw(w, http.StatusOK, out)
}
