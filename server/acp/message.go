package acp

import (
	"encoding/json"
	"errors"
	"strings"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/spawn"
)

// Messaging one session (docs/control.md): the extension request
// _agentpool/session/message {sessionId, text}. A running session (a
// descendant of the connection's sessions, or one of them while its
// prompt runs) reads the text at its next model request, and the answer
// {sessionId, status: "queued"} comes at once; its spawn card shows the
// message when it is read. A child that has ended is continued in its
// session, in a run of its own, once its tree's run is over; the answer
// {sessionId, status: "continued", stopReason, output} comes when that
// run ends (the connection goes on meanwhile). An idle session of the
// connection is prompted with session/prompt, not this.

// methodAgentpoolMessage is the extension method that messages one session.
const methodAgentpoolMessage = "_agentpool/session/message"

// messageResult is the answer of _agentpool/session/message.
type messageResult struct {
	SessionID  string `json:"sessionId"`
	Status     string `json:"status"` // "queued" or "continued"
	StopReason string `json:"stopReason,omitempty"`
	Output     string `json:"output,omitempty"`
}

// extMessage answers _agentpool/session/message. later reports that the
// answer is sent when a continued child's run ends (by a goroutine of
// c.wg), not now.
func (c *conn) extMessage(reqID json.RawMessage, params json.RawMessage) (result any, rerr *rpcError, later bool) {
	var p struct {
		SessionID string `json:"sessionId"`
		Text      string `json:"text"`
	}
	if err := decodeParams(params, &p); err != nil {
		return nil, err, false
	}
	switch {
	case p.SessionID == "":
		return nil, invalidParams("sessionId is required"), false
	case strings.TrimSpace(p.Text) == "":
		return nil, invalidParams("text is required (a message that is not empty)"), false
	case len(p.Text) > spawn.MaxMessageBytes:
		return nil, invalidParams("text has %d bytes, more than the %d allowed", len(p.Text), spawn.MaxMessageBytes), false
	}
	c.mu.Lock()
	open := c.sessions[p.SessionID] != nil
	c.mu.Unlock()
	if !open && !c.inTree(p.SessionID) {
		return nil, sessionNotFound(p.SessionID), false
	}
	if open {
		// The editor's own session: only while its prompt runs.
		err := c.s.pool.Message(c.ctx, p.SessionID, frontEnd, p.Text)
		if errors.Is(err, spawn.ErrNotRunning) {
			return nil, errorf(codeInvalidRequest, "session %s has no prompt in progress: send session/prompt to continue it", p.SessionID), false
		}
		if rerr := messageError(p.SessionID, err); rerr != nil {
			return nil, rerr, false
		}
		return messageResult{SessionID: p.SessionID, Status: "queued"}, nil, false
	}
	err := c.s.pool.Message(c.ctx, p.SessionID, frontEnd, p.Text)
	if err == nil {
		c.log.Info("acp: message a child session", "session", p.SessionID)
		return messageResult{SessionID: p.SessionID, Status: "queued"}, nil, false
	}
	if !errors.Is(err, spawn.ErrNotRunning) {
		return nil, messageError(p.SessionID, err), false
	}
	// A finished child: continued in a run of its own. Its events are
	// stored (session/load replays them); the answer says how it ended.
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		res, err := c.s.pool.MessageOrContinue(c.ctx, p.SessionID, frontEnd, p.Text, event.SinkFunc(func(event.Event) {}))
		if err != nil {
			c.reply(reqID, nil, messageError(p.SessionID, err))
			return
		}
		out := messageResult{SessionID: p.SessionID, Status: "queued"}
		if res != nil {
			c.log.Info("acp: continue a finished child session", "session", p.SessionID, "stop_reason", res.Result.StopReason)
			out.Status, out.StopReason, out.Output = "continued", string(res.Result.StopReason), res.Result.Output
		}
		c.reply(reqID, out, nil)
	}()
	return nil, nil, true
}

// messageError is the JSON-RPC error of a message that could not be
// delivered (nil for none).
func messageError(sid string, err error) *rpcError {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, session.ErrNotFound):
		return sessionNotFound(sid)
	case errors.Is(err, session.ErrRunning):
		return errorf(codeInvalidRequest, "session %s has ended, but the run of its tree goes on: its parent can continue it (send_message); send this again once that run has ended (%v)", sid, err)
	case errors.Is(err, spawn.ErrNotRunning), errors.Is(err, spawn.ErrRunsElsewhere):
		return errorf(codeInvalidRequest, "%v", err)
	}
	return errorf(codeInternalError, "Internal error: %v", err)
}
