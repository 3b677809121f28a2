// POST /session/{id}/fork (a new session continuing from a point of the
// conversation) and POST/DELETE /session/{id}/share (not available).

package opencode

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/agentpool/agentpool/checkpoint"
	"github.com/agentpool/agentpool/model"
	"github.com/agentpool/agentpool/server/opencode/internal/wire"
	"github.com/agentpool/agentpool/session"
)

// branchAPI serves the routes that make a new session of an old one
// (fork) or would publish one (share).
type branchAPI struct{ *base }

// handleFork copies the session's conversation, the messages before the
// body's messageID (all of them without one), into a new root session of
// the same agent (checkpoint.Fork: the captures of the copied messages go
// with it, so the fork can be rewound in turn), announces it with
// session.created and answers it. The original is untouched; a session
// that is running is refused (400), as checkpoint.Fork claims it.
func (s *branchAPI) handleFork(w http.ResponseWriter, r *http.Request) {
	sid := r.PathValue("sessionID")
	var body wire.ForkBody
	if !s.readBody(w, r, &body, true) {
		return
	}
	ctx := r.Context()
	src, err := s.store.GetSession(ctx, sid)
	if err != nil {
		storeError(w, sid, err)
		return
	}
	at := ""
	if body.MessageID != "" {
		if at, err = s.storedCut(ctx, sid, body.MessageID); err != nil {
			badRequest(w, "Body", "%v", err)
			return
		}
	}
	f, err := checkpoint.Fork(ctx, s.store, sid, at)
	switch {
	case errors.Is(err, session.ErrRunning):
		badRequest(w, "Body", "session %s is running: fork it once its run has ended", sid)
		return
	case err != nil:
		internalError(w, err)
		return
	}
	dir := s.dirOf(src)
	st := s.facts.ensure(f.ID)
	st.mu.Lock()
	st.dir.Store(&dir)
	s.facts.touch(st, false) // no transcript yet: the first read builds it from the copied messages
	info := s.wireSession(f)
	s.publish("session.created", f.ID, sessionInfoProps{SessionID: f.ID, Info: info})
	st.mu.Unlock()
	writeJSON(w, http.StatusOK, info)
}

// storedCut is the id of the stored message of session sid before which
// a cut at the transcript's message mid falls. A transcript rebuilt from
// the store uses the stored ids; a live one (this server's prompts) has
// ids of its own, so its message is found by position: the k-th user
// message of the transcript is the k-th stored user message, and a cut at
// an assistant message keeps its turn's user message.
func (s *branchAPI) storedCut(ctx context.Context, sid, mid string) (string, error) {
	msgs, err := s.store.Messages(ctx, sid)
	if err != nil {
		return "", err
	}
	for _, m := range msgs {
		if m.ID == mid {
			return mid, nil
		}
	}
	users, isUser, found := 0, false, false
	if st := s.facts.get(sid); st != nil {
		st.mu.Lock()
		if t := st.trans; t != nil && t.byID[mid] != nil {
			for _, m := range t.msgs {
				if m == t.byID[mid] {
					isUser, found = m.user != nil, true
					break
				}
				if m.user != nil {
					users++
				}
			}
		}
		st.mu.Unlock()
	}
	if !found {
		return "", fmt.Errorf("messageID %s is not a message of session %s", mid, sid)
	}
	seen := 0
	for i, m := range msgs {
		if m.Role != model.RoleUser {
			continue
		}
		if isUser && seen == users {
			return m.ID, nil
		}
		seen++
		if !isUser && seen == users && i+1 < len(msgs) {
			return msgs[i+1].ID, nil
		}
	}
	return "", fmt.Errorf("messageID %s: its turn is not stored in session %s yet", mid, sid)
}

// handleShare answers POST and DELETE /session/{id}/share: agentpool has
// no share service, so it is a 400 BadRequest the TUI shows as its
// message (after a 404 for an unknown session).
func (s *branchAPI) handleShare(w http.ResponseWriter, r *http.Request) {
	sid := r.PathValue("sessionID")
	if _, err := s.store.GetSession(r.Context(), sid); err != nil {
		storeError(w, sid, err)
		return
	}
	badRequest(w, "", "sharing is not available: agentpool has no share service; the session stays on this server (`agentpool sessions show %s`)", sid)
}
