package durable

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/id"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/spawn"
)

// RootRequest is a root run to submit.
type RootRequest struct {
	Node      spawn.Node
	Prompt    string
	TaskQueue string
	// SessionID, when set, is the id of the new root session.
	SessionID string
}

// RunRoot runs a root session on Temporal: it creates the session in the
// store, starts its workflow (id: the session id), hands the tree's events
// to sink as they are committed (see follower) and returns the run's end
// once the workflow ended and its last events were handed on. A
// cancellation of ctx cancels the workflow (and with it the tree) and
// waits for it to end aborted.
func RunRoot(ctx context.Context, c client.Client, st session.Store, req RootRequest, sink event.Sink) (string, SessionOutput, error) {
	now := time.Now()
	sid := req.SessionID
	if sid == "" {
		sid = id.DescendingAt(id.Session, now)
	}
	root := session.Session{ID: sid, AgentName: req.Node.Name(), SourceType: req.Node.SourceType(),
		Title: title(req.Prompt), Status: session.StatusRunning, CreatedAt: now, UpdatedAt: now,
		Metadata: map[string]any{session.MetaEngine: EngineName}}
	if err := st.CreateSession(ctx, root); err != nil {
		return sid, SessionOutput{}, fmt.Errorf("create root session: %w", err)
	}
	if err := st.Flush(ctx); err != nil {
		return sid, SessionOutput{}, err
	}
	in := SessionInput{Session: root, RunID: id.AscendingAt(id.Run, now), Prompt: req.Prompt}
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: sid, TaskQueue: req.TaskQueue}, WorkflowName, in)
	if err != nil {
		return sid, SessionOutput{}, fmt.Errorf("start the root's workflow: %w", err)
	}
	done := make(chan struct{})
	followCtx, stopFollow := context.WithCancel(context.WithoutCancel(ctx))
	defer stopFollow()
	followed := make(chan error, 1)
	f := newFollower(st, sid, 0, sink)
	go func() { followed <- f.follow(followCtx, done) }()

	type ended struct {
		out SessionOutput
		err error
	}
	got := make(chan ended, 1)
	getCtx, stopGet := context.WithCancel(context.WithoutCancel(ctx))
	defer stopGet() // a wait that was given up ends with the call
	go func() {
		var o SessionOutput
		err := run.Get(getCtx, &o)
		got <- ended{o, err}
	}()
	var out SessionOutput
	select {
	case e := <-got:
		out, err = e.out, e.err
	case <-ctx.Done():
		// The root's cancellation cancels the tree; its end is awaited.
		if cerr := c.CancelWorkflow(context.WithoutCancel(ctx), sid, run.GetRunID()); cerr != nil {
			err = cerr
		} else {
			e := <-got
			out, err = e.out, e.err
		}
	}
	close(done)
	ferr := <-followed
	if err != nil {
		return sid, out, fmt.Errorf("root workflow: %w", err)
	}
	return sid, out, ferr
}

// Result is out as a spawn.Result.
func (out SessionOutput) Result() spawn.Result {
	r := spawn.Result{Output: out.Output, StopReason: out.StopReason, Usage: out.Usage, Cost: out.Cost, Messages: out.Messages}
	if out.Error != "" {
		r.Err = errors.New(out.Error)
	}
	return r
}

func title(prompt string) string {
	t := cutText(prompt, 60)
	if t == "" {
		return "agentpool run"
	}
	return t
}
