// POST /session/{id}/revert and /unrevert: the TUI's /undo and /redo, on
// the same operations as `agentpool sessions rewind` (checkpoint.Rewind
// in mode both, checkpoint.Undo).

package opencode

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/agentpool/agentpool/checkpoint"
	"github.com/agentpool/agentpool/server/opencode/internal/wire"
	"github.com/agentpool/agentpool/session"
)

// metaRevert is the Metadata key of a session that stands reverted
// through this server: {"messageID", "partID"}, answered as
// Session.revert. Unrevert removes it, and so do the next prompt (promptsAPI.run)
// and shell command (clearRevert) of this server, which go on from the
// reverted point as OpenCode's do.
const metaRevert = "opencode_revert"

// messageRemovedProps is message.removed.
type messageRemovedProps struct {
	SessionID string `json:"sessionID"`
	MessageID string `json:"messageID"`
}

// revertAPI serves revert and unrevert.
type revertAPI struct{ *base }

// handleRevert takes the session back to just before the body's message:
// the files its tools changed from that message on are restored and the
// conversation is cut there (checkpoint.Rewind, mode both; the whole
// conversation stays in a fork). The cached transcript is rebuilt from
// the store and the change published (message.removed for each message
// cut, session.updated with revert set). A running session is a 400.
func (s *revertAPI) handleRevert(w http.ResponseWriter, r *http.Request) {
	sid := r.PathValue("sessionID")
	var body wire.RevertBody
	if !s.readBody(w, r, &body, false) {
		return
	}
	ctx := r.Context()
	if _, err := s.store.GetSession(ctx, sid); err != nil {
		storeError(w, sid, err)
		return
	}
	if body.MessageID == "" {
		badRequest(w, "Body", "field messageID is required: the message to revert the session to")
		return
	}
	if s.running(sid) {
		badRequest(w, "Body", "session %s is running: revert it once its run has ended (or abort it)", sid)
		return
	}
	s.history.seed(ctx, sid) // the transcript the client has, to say what is removed
	at, err := (&branchAPI{s.base}).storedCut(ctx, sid, body.MessageID)
	if err != nil {
		badRequest(w, "Body", "%v", err)
		return
	}
	mode, ok := revertMode(w, r)
	if !ok {
		return
	}
	_, err = checkpoint.Rewind(ctx, s.store, sid, at, mode)
	if !s.answerErr(w, sid, "revert", err) {
		return
	}
	if mode == checkpoint.Code {
		// The conversation stays: the session does not stand reverted.
		s.resync(ctx, w, sid, s.store.Flush(ctx))
		return
	}
	err = s.store.UpdateSession(ctx, sid, func(rec *session.Session) {
		if rec.Metadata == nil {
			rec.Metadata = map[string]any{}
		}
		rec.Metadata[metaRevert] = map[string]any{"messageID": body.MessageID, "partID": body.PartID}
		rec.UpdatedAt = time.Now()
	})
	if err == nil {
		err = s.store.Flush(ctx)
	}
	s.resync(ctx, w, sid, err)
}

// handleUnrevert takes the session's last revert back (checkpoint.Undo):
// the files as they were before it and the messages it cut. A session
// that went on since its revert keeps its conversation (a 400 that names
// the fork holding the old one); a running session is a 400.
func (s *revertAPI) handleUnrevert(w http.ResponseWriter, r *http.Request) {
	sid := r.PathValue("sessionID")
	ctx := r.Context()
	if _, err := s.store.GetSession(ctx, sid); err != nil {
		storeError(w, sid, err)
		return
	}
	if s.running(sid) {
		badRequest(w, "Body", "session %s is running: unrevert it once its run has ended (or abort it)", sid)
		return
	}
	s.history.seed(ctx, sid)
	_, err := checkpoint.Undo(ctx, s.store, sid)
	if !s.answerErr(w, sid, "unrevert", err) {
		return
	}
	err = s.store.UpdateSession(ctx, sid, func(rec *session.Session) {
		delete(rec.Metadata, metaRevert)
		rec.UpdatedAt = time.Now()
	})
	if err == nil {
		err = s.store.Flush(ctx)
	}
	s.resync(ctx, w, sid, err)
}

// running says whether this server runs sid or has prompts queued for it.
func (s *revertAPI) running(sid string) bool {
	st := s.facts.get(sid)
	if st == nil {
		return false
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.busy.Load() || st.active != nil || (st.runs != nil && (st.runs.running || len(st.runs.waiting) > 0))
}

// answerErr answers a failed checkpoint operation and says whether there
// was none: a running session and an operation that cannot be done are a
// 400; files that could not all be restored are a 500 naming them (the
// others were, and the transcript is still rebuilt by the caller's next
// read).
func (s *revertAPI) answerErr(w http.ResponseWriter, sid, op string, err error) bool {
	switch {
	case err == nil:
		return true
	case errors.Is(err, session.ErrRunning):
		badRequest(w, "Body", "session %s is running: %s it once its run has ended", sid, op)
	case errors.Is(err, checkpoint.ErrRestore):
		s.dropTranscript(sid)
		internalError(w, err)
	default:
		s.dropTranscript(sid)
		badRequest(w, "Body", "%s: %v", op, err)
	}
	return false
}

// dropTranscript lets the cached transcript of sid go: the next read
// builds it from the store.
func (s *revertAPI) dropTranscript(sid string) {
	if st := s.facts.get(sid); st != nil {
		st.mu.Lock()
		if st.trans != nil {
			st.trans = nil
			s.facts.cached.Add(-1)
		}
		st.mu.Unlock()
	}
}

// resync replaces the cached transcript of sid by one built from the
// store, publishes what changed for a client that holds the old one
// (message.removed for each message gone, message.updated and
// message.part.updated for each new one, then session.updated) and
// answers the session; err is a failure of the caller's last write.
func (s *revertAPI) resync(ctx context.Context, w http.ResponseWriter, sid string, err error) {
	st := s.facts.ensure(sid)
	st.mu.Lock()
	old := map[string]bool{}
	var order []string
	if t := st.trans; t != nil {
		for _, m := range t.msgs {
			old[m.id()] = true
			order = append(order, m.id())
		}
		st.trans = nil
		s.facts.cached.Add(-1)
	}
	st.mu.Unlock()
	if err != nil {
		internalError(w, err)
		return
	}
	rec, err := s.store.GetSession(ctx, sid)
	if err != nil {
		storeError(w, sid, err)
		return
	}
	t := s.history.storeTranscript(ctx, rec)
	t.shelveStored()
	now := ms(time.Now())
	st.mu.Lock()
	t = s.facts.keep(st, t)
	for _, id := range order {
		if t.byID[id] == nil {
			s.publish("message.removed", sid, messageRemovedProps{SessionID: sid, MessageID: id})
		}
	}
	for _, m := range t.msgs {
		if old[m.id()] {
			continue
		}
		s.publish("message.updated", sid, messageProps{SessionID: sid, Info: m.info()})
		for _, p := range m.parts {
			s.publish("message.part.updated", sid, partProps{SessionID: sid, Part: p.value(), Time: now})
		}
	}
	info := s.wireSession(rec)
	s.publish("session.updated", sid, sessionInfoProps{SessionID: sid, Info: info})
	st.mu.Unlock()
	writeJSON(w, http.StatusOK, info)
}

// clearRevert removes sid's revert point: a shell command run on it goes
// on from there (a prompt removes it in promptsAPI.run).
func clearRevert(ctx context.Context, st session.Store, sid string, log *slog.Logger) {
	rec, err := st.GetSession(ctx, sid)
	if err != nil || rec.Metadata[metaRevert] == nil {
		return
	}
	if err := st.UpdateSession(ctx, sid, func(r *session.Session) { delete(r.Metadata, metaRevert) }); err != nil {
		log.Warn("opencode: clear revert", "session", sid, "err", err)
	}
}

// revertOf is the Session.revert of rec: its revert point while it
// stands reverted, nil otherwise.
func revertOf(rec session.Session) *wire.SessionRevert {
	m, _ := rec.Metadata[metaRevert].(map[string]any)
	mid, _ := m["messageID"].(string)
	if mid == "" {
		return nil
	}
	pid, _ := m["partID"].(string)
	return &wire.SessionRevert{MessageID: mid, PartID: pid}
}
