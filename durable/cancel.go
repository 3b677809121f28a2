package durable

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/agentpool/agentpool/spawn"
)

// cancelFollow bounds how long CancelSession follows a cancelled
// session's workflow to its end.
const cancelFollow = 2 * time.Minute

// startWait bounds how long CancelSession and MessageSession wait for a
// session's workflow to appear (polled every startPoll): the time
// Temporal may take to start a child workflow its parent has announced.
const (
	startWait = 5 * time.Second
	startPoll = 50 * time.Millisecond
)

// CancelSession cancels the workflow of session sessionID (every session
// of a durable run is a workflow of the session's id): a child ends
// aborted with its subtree (its workflows are cancelled with it, by the
// parent close policy), and its parent, whose child workflow then fails
// as cancelled, goes on with a tool result that says so; a root's whole
// run ends. The channel is closed once the workflow has ended (followed
// for at most two minutes). A session with no workflow errors.Is
// spawn.ErrRunsElsewhere; one whose workflow has ended, spawn.ErrNotRunning.
//
// by names who asked (the front end): a child's parent workflow is told
// first (SignalChildCancelled), so that its tool result says "cancelled
// by the user (from <by>)" as in this process.
func CancelSession(ctx context.Context, c client.Client, sessionID, by string) (<-chan struct{}, error) {
	var d *client.WorkflowExecutionDescription
	err := untilStarted(ctx, func() (err error) {
		d, err = c.DescribeWorkflow(ctx, sessionID, "")
		return err
	})
	if _, ok := errors.AsType[*serviceerror.NotFound](err); ok {
		return nil, fmt.Errorf("cancel %s: %w (no workflow of that id)", sessionID, spawn.ErrRunsElsewhere)
	}
	if err != nil {
		return nil, fmt.Errorf("cancel %s: %w", sessionID, err)
	}
	desc := d.RawResponse
	if st := desc.GetWorkflowExecutionInfo().GetStatus(); st != enums.WORKFLOW_EXECUTION_STATUS_RUNNING {
		return nil, fmt.Errorf("cancel %s: %w (its workflow is %s)", sessionID, spawn.ErrNotRunning, st)
	}
	runID := desc.GetWorkflowExecutionInfo().GetExecution().GetRunId()
	if parent := desc.GetWorkflowExecutionInfo().GetParentExecution(); parent != nil && by != "" {
		// Before the cancel: the parent reads it first. A parent that
		// cannot be told says "from a front end".
		// The parent's current run: a team's workflow may have continued
		// as new since the child started.
		_ = c.SignalWorkflow(ctx, parent.GetWorkflowId(), "", SignalChildCancelled, ChildCancelledSignal{Session: sessionID, By: by})
	}
	// The current run too (a team's workflow continues as new); the
	// follow below goes along its runs.
	if err := c.CancelWorkflow(ctx, sessionID, ""); err != nil {
		return nil, fmt.Errorf("cancel %s: %w", sessionID, err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		fctx, stop := context.WithTimeout(context.WithoutCancel(ctx), cancelFollow)
		defer stop()
		_ = c.GetWorkflow(fctx, sessionID, runID).Get(fctx, nil)
	}()
	return done, nil
}

// SignalChildCancelled tells a session's workflow who is about to cancel
// one of its children (CancelSession): the child's end then carries a
// spawn.CancelledError with By.
const SignalChildCancelled = "child_cancelled"

// ChildCancelledSignal is the payload of SignalChildCancelled.
type ChildCancelledSignal struct {
	Session string `json:"session"`
	By      string `json:"by"`
}

// SignalMessage is the signal that delivers a person's message to a
// running session's workflow (MessageSignal), read at its next model
// request as in this process (spawn.Runtime.Message).
const SignalMessage = "message"

// MessageSignal is the payload of SignalMessage.
type MessageSignal struct {
	By string `json:"by"` // the front end ("opencode", "web", "cli")
	// Agent and Session, when set, are the parent agent and its session
	// that sent it (send_message): the child reads the parent's words.
	Agent   string `json:"agent,omitempty"`
	Session string `json:"session,omitempty"`
	Text    string `json:"text"`
}

// MessageSession signals text to the workflow of session sessionID. A
// session with no running workflow errors.Is spawn.ErrRunsElsewhere (no
// workflow of that id) or spawn.ErrNotRunning (it has ended).
func MessageSession(ctx context.Context, c client.Client, sessionID, by, text string) error {
	signal := func() error {
		return c.SignalWorkflow(ctx, sessionID, "", SignalMessage, MessageSignal{By: by, Text: text})
	}
	err := signal()
	if _, ok := errors.AsType[*serviceerror.NotFound](err); ok {
		// Not running: ended, or not started yet (untilStarted).
		var d *client.WorkflowExecutionDescription
		derr := untilStarted(ctx, func() (err error) {
			d, err = c.DescribeWorkflow(ctx, sessionID, "")
			return err
		})
		switch {
		case derr == nil && d.RawResponse.GetWorkflowExecutionInfo().GetStatus() == enums.WORKFLOW_EXECUTION_STATUS_RUNNING:
			err = signal()
		case derr == nil:
			return fmt.Errorf("message %s: %w (its workflow is %s)", sessionID, spawn.ErrNotRunning, d.RawResponse.GetWorkflowExecutionInfo().GetStatus())
		default:
			return fmt.Errorf("message %s: %w (no workflow of that id)", sessionID, spawn.ErrRunsElsewhere)
		}
	}
	if err != nil {
		return fmt.Errorf("message %s: %w", sessionID, err)
	}
	return nil
}

// untilStarted calls try until it finds the workflow (try's error is not
// serviceerror.NotFound), for at most startWait, polling every startPoll:
// a parent announces its child (spawn_session_start) before Temporal has
// started the child's workflow, so a cancel or a message that follows the
// announcement at once must wait for it a little. It returns try's last
// error, or ctx's.
func untilStarted(ctx context.Context, try func() error) error {
	err := try()
	if _, ok := errors.AsType[*serviceerror.NotFound](err); !ok {
		return err
	}
	wait := time.NewTimer(startWait)
	defer wait.Stop()
	tick := time.NewTicker(startPoll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-wait.C:
			return err
		case <-tick.C:
			if err = try(); err == nil {
				return nil
			}
			if _, ok := errors.AsType[*serviceerror.NotFound](err); !ok {
				return err
			}
		}
	}
}
