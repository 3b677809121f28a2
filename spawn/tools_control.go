package spawn

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/tool"
)

// The tools a parent steers its children with (docs/control.md), in
// Claude Code's vocabulary: task_output (TaskOutput: read, optionally
// wait), task_stop (TaskStop, formerly KillShell: stop one background
// child) and send_message (SendMessage, the tool Claude Code's agents
// message each other with: to a running child, delivered at its next
// turn; to a finished one, continued in its session).

type childArgs struct {
	TaskID    string `json:"task_id,omitempty" jsonschema:"description=The task id of a background child (from task with async_mode)"`
	SessionID string `json:"session_id,omitempty" jsonschema:"description=The session id of a child (any of yours, sync or background)"`
}

type messageArgs struct {
	TaskID    string `json:"task_id,omitempty" jsonschema:"description=The task id of a background child (from task with async_mode)"`
	SessionID string `json:"session_id,omitempty" jsonschema:"description=The session id of a child (any of yours, sync or background)"`
	Message   string `json:"message" jsonschema:"description=What to tell the child"`
}

type outputArgs struct {
	TaskID    string `json:"task_id" jsonschema:"description=The task id returned by an async task call"`
	Block     bool   `json:"block,omitempty" jsonschema:"description=Wait for the task to end (at most timeout_ms) instead of answering at once"`
	TimeoutMS int    `json:"timeout_ms,omitempty" jsonschema:"description=With block: how long to wait, in milliseconds (default 30000, at most 600000)"`
}

// Bounds of task_output's wait.
const (
	DefaultOutputWait = 30 * time.Second
	MaxOutputWait     = 10 * time.Minute
)

// StopWait bounds how long task_stop waits for the child to end.
const StopWait = 10 * time.Second

// ownChild finds the child of inv named by a task id or a session id (at
// least one; both must agree): its stored record and its latest
// background task in this run (nil: none).
func (inv *Invocation) ownChild(ctx context.Context, taskID, sessionID string) (session.Session, *Task, error) {
	var t *Task
	if taskID != "" {
		var ok bool
		if t, ok = inv.Task(taskID); !ok {
			return session.Session{}, nil, fmt.Errorf("unknown task %q", taskID)
		}
		if sessionID != "" && sessionID != t.SessionID {
			return session.Session{}, nil, fmt.Errorf("task %s runs in session %s, not %s", taskID, t.SessionID, sessionID)
		}
		sessionID = t.SessionID
	} else if sessionID == "" {
		return session.Session{}, nil, errors.New("task_id or session_id is required")
	}
	if st := inv.steerer(); st != nil {
		// Under an engine the children are its own (no store here).
		rec, ok := st.Child(ctx, inv, sessionID)
		if !ok {
			return rec, nil, fmt.Errorf("session %s: unknown, or %w (%s): it is not yours to steer", sessionID, ErrNotYourChild, inv.Session.ID)
		}
		if inv.run != nil {
			if latest := inv.run.tasks.ofSession(sessionID); latest != nil {
				t = latest
			}
		}
		return rec, t, nil
	}
	rec, err := inv.Runtime.Store().GetSession(ctx, sessionID)
	if errors.Is(err, session.ErrNotFound) {
		return rec, nil, fmt.Errorf("unknown session %q", sessionID)
	}
	if err != nil {
		return rec, nil, fmt.Errorf("session %s: %w", sessionID, err)
	}
	if rec.ParentID != inv.Session.ID {
		return rec, nil, fmt.Errorf("session %s: %w (%s): it is not yours to steer", sessionID, ErrNotYourChild, inv.Session.ID)
	}
	if inv.run != nil {
		if latest := inv.run.tasks.ofSession(sessionID); latest != nil {
			t = latest
		}
	}
	return rec, t, nil
}

var taskStopTool = inline{tool.New("task_stop",
	"Stop one of your children that is running (a background task, by task_id or session_id). It ends aborted with its own children; you and your other children go on. The result says what was stopped.",
	func(ctx context.Context, _ tool.Call, a childArgs) (tool.Result, error) {
		inv := InvocationFrom(ctx)
		if inv == nil {
			return tool.Errorf("task_stop: no session in context"), nil
		}
		rec, t, err := inv.ownChild(ctx, a.TaskID, a.SessionID)
		if err != nil {
			return tool.Errorf("task_stop: %v", err), nil
		}
		ended, err := stopChild(ctx, inv, rec, &CancelledError{SessionID: rec.ID, By: "task_stop", Agent: inv.Session.AgentName})
		if err != nil {
			return tool.Errorf("task_stop: %v", err), nil
		}
		out := map[string]string{"session_id": rec.ID, "agent": rec.AgentName}
		if t != nil {
			out["task_id"] = t.ID
		}
		out["status"] = "stopping"
		if ended {
			out["status"] = string(event.StopAborted)
			if t != nil {
				if res, ok := t.Result(); ok && t.SessionID == rec.ID {
					out["status"], out["output"] = string(res.StopReason), res.Output
				}
			}
		}
		out["stopped"] = fmt.Sprintf("%s (session %s)", rec.AgentName, rec.ID)
		return jsonResult(out, false), nil
	})}

var sendMessageTool = titled{tool.New("send_message",
	"Send a message to one of your children, by task_id or session_id. A running child reads it at its next turn (the result says it was delivered; its answer comes as ever). A finished child is continued in its session, with its conversation, and answers: at once for a child you ran in the foreground, as a background task (a new task_id) for a background one. A cancelled child cannot be messaged.",
	func(ctx context.Context, call tool.Call, a messageArgs) (tool.Result, error) {
		inv := InvocationFrom(ctx)
		if inv == nil {
			return tool.Errorf("send_message: no session in context"), nil
		}
		if err := checkMessage(a.Message); err != nil {
			return tool.Errorf("send_message: %v", err), nil
		}
		rec, t, err := inv.ownChild(ctx, a.TaskID, a.SessionID)
		if err != nil {
			return tool.Errorf("send_message: %v", err), nil
		}
		from := Sender{Agent: inv.Session.AgentName, Session: inv.Session.ID}
		if st := inv.steerer(); st != nil {
			// Under an engine: a running child is messaged through it; a
			// finished one is not continued there (Resume says so).
			if rec.Status == session.StatusRunning {
				err = st.MessageChild(ctx, inv, rec.ID, from, a.Message)
			} else {
				err = fmt.Errorf("message %s: %w (%s)", rec.ID, ErrNotRunning, rec.Status)
			}
		} else {
			err = inv.Runtime.Message(ctx, rec.ID, from, a.Message)
		}
		if err == nil {
			return jsonResult(map[string]string{"session_id": rec.ID, "status": TaskRunning,
				"delivered": "queued: the child reads it at its next turn"}, false), nil
		}
		if !errors.Is(err, ErrNotRunning) {
			return tool.Errorf("send_message: %v", err), nil
		}
		if inv.steerer() == nil {
			if rec, err = inv.Runtime.Store().GetSession(ctx, rec.ID); err != nil { // as it ended
				return tool.Errorf("send_message: %v", err), nil
			}
		}
		async := t != nil // a background child goes on in the background
		child, err := Resume(ctx, inv, rec, a.Message, "parent", async, call.ID)
		if err != nil {
			ReportRefused(inv, Request{Node: nodeOrNil(inv.Runtime, rec.AgentName), Prompt: a.Message, ToolCallID: call.ID, Mechanism: event.MechanismTask}, err)
			return tool.Errorf("send_message: %v%s", err, limitHint(err)), nil
		}
		if async {
			return jsonResult(map[string]string{"task_id": child.TaskID, "session_id": child.SessionID, "status": TaskRunning,
				"continued": "the finished child goes on in the background; its answer comes as a message"}, false), nil
		}
		return childResult(child), nil
	}), func(call tool.Call) string {
	var a messageArgs
	_ = json.Unmarshal(call.Args, &a)
	if a.TaskID != "" {
		return "Message " + a.TaskID
	}
	return "Message " + a.SessionID
}}

// stopChild cancels inv's running child rec with cause and waits, at most
// StopWait, for its end: through inv's Env when it is a Steerer, else in
// this runtime.
func stopChild(ctx context.Context, inv *Invocation, rec session.Session, cause *CancelledError) (ended bool, err error) {
	if st := inv.steerer(); st != nil {
		if rec.Status != session.StatusRunning {
			return false, fmt.Errorf("cancel %s: %w (%s)", rec.ID, ErrNotRunning, rec.Status)
		}
		return st.StopChild(ctx, inv, rec.ID, cause, StopWait)
	}
	done, err := inv.Runtime.cancelWith(ctx, cause)
	if err != nil {
		return false, err
	}
	timer := time.NewTimer(StopWait)
	defer timer.Stop()
	select {
	case <-done:
		return true, nil
	case <-timer.C:
		return false, nil
	case <-ctx.Done():
		return false, context.Cause(ctx)
	}
}

// nodeOrNil looks a node up by name.
func nodeOrNil(rt *Runtime, name string) Node {
	n, _ := rt.Lookup(name)
	return n
}

// waitTask waits, at most d, for t to end; false when it did not.
func waitTask(ctx context.Context, t *Task, d time.Duration) bool {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-t.Done():
		return true
	case <-timer.C:
	case <-ctx.Done():
	}
	return false
}

// outputWait is how long task_output waits: none without block, else the
// timeout asked for (default DefaultOutputWait), at most MaxOutputWait.
func (a outputArgs) outputWait() (time.Duration, error) {
	if !a.Block {
		if a.TimeoutMS != 0 {
			return 0, errors.New("timeout_ms is for block: true")
		}
		return 0, nil
	}
	switch {
	case a.TimeoutMS < 0:
		return 0, fmt.Errorf("timeout_ms must be positive, got %d", a.TimeoutMS)
	case a.TimeoutMS == 0:
		return DefaultOutputWait, nil
	}
	d := time.Duration(a.TimeoutMS) * time.Millisecond
	if d > MaxOutputWait {
		return 0, fmt.Errorf("timeout_ms is at most %d, got %d", MaxOutputWait.Milliseconds(), a.TimeoutMS)
	}
	return d, nil
}
