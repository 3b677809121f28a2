package agui

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/server/httpsec"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/spawn"
)

// maxMessageBody bounds the body of POST /sessions/{id}/message: a message
// of at most spawn.MaxMessageBytes, escaped, and its key.
const maxMessageBody = 2*spawn.MaxMessageBytes + 1024

// messageAnswer is the answer of POST /sessions/{id}/message.
type messageAnswer struct {
	SessionID  string `json:"sessionId"`
	Status     string `json:"status"` // "queued" or "continued"
	StopReason string `json:"stopReason,omitempty"`
	Output     string `json:"output,omitempty"`
}

// handleMessage answers POST /sessions/{id}/message with {"text"}
// (docs/agui.md, docs/control.md): a running session (a child's
// subagentRunId, or a run's root session) reads the text at its next
// model request, as "Message from the user (from agui):" and the text:
// 202 {sessionId, status: "queued"}; the child's stream shows it as a
// CUSTOM session_message event. A child that has ended is continued in
// its session once its tree's run is over, in a run of its own (its
// events are stored): 200 {sessionId, status: "continued", stopReason,
// output} when that run ends. 400 for a body that is not {"text": a
// string that is not empty}, 404 for an unknown session, 409 for a
// session not running here, a finished child whose tree's run goes on,
// or an idle root session (send it a run of its thread instead).
func (s *Server) handleMessage(w http.ResponseWriter, r *http.Request) {
	sid := r.PathValue("id")
	text, ok := s.readMessage(w, r)
	if !ok {
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	stop := context.AfterFunc(s.runs, cancel)
	defer stop()
	err := s.pool.Message(ctx, sid, frontEnd, text)
	if err == nil {
		writeJSON(w, http.StatusAccepted, messageAnswer{SessionID: sid, Status: "queued"})
		return
	}
	if errors.Is(err, spawn.ErrNotRunning) {
		if rec, gerr := s.pool.Store().GetSession(ctx, sid); gerr == nil && rec.ParentID == "" {
			writeError(w, http.StatusConflict, fmt.Sprintf("session %s is not running: continue it with a run of its thread (POST /)", sid))
			return
		}
		res, cerr := s.pool.MessageOrContinue(ctx, sid, frontEnd, text, event.SinkFunc(func(event.Event) {}))
		switch {
		case cerr == nil && res == nil: // it was running again after all
			writeJSON(w, http.StatusAccepted, messageAnswer{SessionID: sid, Status: "queued"})
			return
		case cerr == nil:
			s.log.Info("agui: continued a finished child session", "session", sid, "stop_reason", res.Result.StopReason)
			writeJSON(w, http.StatusOK, messageAnswer{SessionID: sid, Status: "continued",
				StopReason: string(res.Result.StopReason), Output: res.Result.Output})
			return
		}
		err = cerr
	}
	switch {
	case errors.Is(err, session.ErrNotFound):
		writeError(w, http.StatusNotFound, fmt.Sprintf("no session %q", sid))
	case errors.Is(err, session.ErrRunning):
		writeError(w, http.StatusConflict, fmt.Sprintf("session %s has ended, but the run of its tree goes on: its parent can continue it (send_message); send this again once that run has ended (%v)", sid, err))
	case errors.Is(err, spawn.ErrNotRunning), errors.Is(err, spawn.ErrRunsElsewhere):
		writeError(w, http.StatusConflict, err.Error())
	default:
		writeError(w, http.StatusInternalServerError, err.Error())
	}
}

// readMessage reads the body {"text": string}: exactly that key, a text
// that is not empty, at most spawn.MaxMessageBytes. It answers the
// request itself (4xx) when the body is not so.
func (s *Server) readMessage(w http.ResponseWriter, r *http.Request) (string, bool) {
	ct := r.Header.Get("Content-Type")
	if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
		if ct == "" {
			ct = "none"
		}
		writeError(w, http.StatusUnsupportedMediaType, fmt.Sprintf("Content-Type must be application/json, got %s", ct))
		return "", false
	}
	raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxMessageBody))
	if err != nil {
		var mbe *http.MaxBytesError
		switch {
		case errors.As(err, &mbe):
			writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body larger than %d bytes", mbe.Limit))
		case httpsec.BodyTimedOut(err):
			writeError(w, http.StatusRequestTimeout, fmt.Sprintf("request body not received within %s", s.opts.BodyTimeout))
		default:
			writeError(w, http.StatusBadRequest, "read body: "+err.Error())
		}
		return "", false
	}
	var body struct {
		Text *string `json:"text"`
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	bad := func(msg string) (string, bool) {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": msg, "field": "text"})
		return "", false
	}
	if err := dec.Decode(&body); err != nil || dec.More() {
		return bad(`the body must be the JSON object {"text": string} and nothing else`)
	}
	switch {
	case body.Text == nil || strings.TrimSpace(*body.Text) == "":
		return bad("text is required (a message that is not empty)")
	case len(*body.Text) > spawn.MaxMessageBytes:
		return bad(fmt.Sprintf("text has %d bytes, more than the %d allowed", len(*body.Text), spawn.MaxMessageBytes))
	}
	return *body.Text, true
}
