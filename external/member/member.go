package member

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/id"
	"github.com/agentpool/agentpool/internal/detach"
	"github.com/agentpool/agentpool/model"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/spawn"
)

// Store appends m to the transcript of the invocation's session, as
// agent's message, and returns its id (the checkpoint of what the agent
// changes in answer to it; "" when it was not stored). A run without a
// store keeps nothing.
func Store(ctx context.Context, inv *spawn.Invocation, agent string, log *slog.Logger, m model.Message) string {
	st := inv.Runtime.Store()
	if st == nil {
		return ""
	}
	now := time.Now()
	mid := id.AscendingAt(id.Message, now)
	err := st.AppendMessages(detach.Context(ctx), inv.Session.ID, session.Message{
		ID: mid, SessionID: inv.Session.ID, AgentName: agent, CreatedAt: now, Message: m,
	})
	if err != nil {
		if log != nil {
			log.Warn("external agent: store messages", "agent", agent, "session", inv.Session.ID, "err", err)
		}
		return ""
	}
	return mid
}

// Fail ends the run with err: a run_error of code, stop reason error.
func Fail(inv *spawn.Invocation, agent string, err error, code string) spawn.Result {
	inv.Sink.Emit(event.RunError{Message: err.Error(), Code: code, RunID: inv.RunID, AgentName: agent})
	return spawn.Result{StopReason: event.StopError, Err: err}
}

// Abort ends the run cancelled (cause; context.Canceled when nil) or
// timed out (cause is spawn.ErrTimeout): stop reason aborted.
func Abort(inv *spawn.Invocation, agent string, cause error) spawn.Result {
	if cause == nil {
		cause = context.Canceled
	}
	msg, code := "run cancelled: ", "aborted"
	if errors.Is(cause, spawn.ErrTimeout) {
		msg, code = "run timed out: ", "timeout"
	}
	inv.Sink.Emit(event.RunError{Message: msg + cause.Error(), Code: code, RunID: inv.RunID, AgentName: agent})
	return spawn.Result{StopReason: event.StopAborted, Err: cause}
}
