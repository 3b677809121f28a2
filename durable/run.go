package durable

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/id"
	"github.com/agentpool/agentpool/model"
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
	// Stored, when its ID is set, is the root's record as the caller put
	// it in the store: a new session, or a stored one set running again
	// to continue it with History (its conversation so far). RunRoot then
	// creates no session, and the run's events follow the log's existing
	// ones. RunID, when set, is the run's id.
	Stored  session.Session
	History []model.Message
	RunID   string
	// SubmitterHooks: the caller runs the root's session/start and /end
	// hooks (SessionInput.SubmitterHooks).
	SubmitterHooks bool
	// Approver, when set, shows the run's approval requests in its
	// broker and signals the answers (approver.go); without one an ask is
	// refused on the worker.
	Approver *Approver
}

// RunRoot runs a root session on Temporal: it creates the session in the
// store (or takes req.Stored), starts its workflow (id: the session id;
// the workflow of an earlier run of the session has ended, as the caller
// holds the session's claim, and its id is reused), hands the tree's
// events to sink as they are committed (see follower) and returns the
// run's end once the workflow ended and its last events were handed on.
// A cancellation of ctx cancels the workflow (and with it the tree) and
// waits for it to end aborted.
func RunRoot(ctx context.Context, c client.Client, st session.Store, req RootRequest, sink event.Sink) (string, SessionOutput, error) {
	now := time.Now()
	root, afterSeq, err := rootSession(ctx, st, req, now)
	if err != nil {
		return root.ID, SessionOutput{}, err
	}
	sid := root.ID
	runID := req.RunID
	if runID == "" {
		runID = id.AscendingAt(id.Run, now)
	}
	in := SessionInput{Session: root, RunID: runID, Prompt: req.Prompt, History: req.History, AfterSeq: afterSeq, SubmitterHooks: req.SubmitterHooks,
		EndLocal: true, WaitLocal: true, SignalYield: true, ChildNames: true}
	if req.Approver != nil {
		policy := req.Approver.Policy
		in.Approvals = &policy
	}
	// Started even when ctx ends meanwhile: the cancellation below ends
	// the run aborted, as a cancelled run in this process ends.
	run, err := c.ExecuteWorkflow(context.WithoutCancel(ctx), client.StartWorkflowOptions{ID: sid, TaskQueue: req.TaskQueue,
		// A session runs one run at a time: a workflow of the id still
		// running is an error, not a run to join.
		WorkflowIDReusePolicy:                    enums.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		WorkflowExecutionErrorWhenAlreadyStarted: true,
	}, WorkflowName, in)
	if err != nil {
		return sid, SessionOutput{}, fmt.Errorf("start the root's workflow: %w", err)
	}
	done := make(chan struct{})
	followCtx, stopFollow := context.WithCancel(context.WithoutCancel(ctx))
	defer stopFollow()
	followed := make(chan error, 1)
	f := newFollower(st, sid, afterSeq, sink)
	if req.Approver != nil {
		w, stopAsking := req.Approver.watch(ctx, sink)
		defer stopAsking() // after the follower: its last poll may settle requests
		f.sink, f.polled = w, w.polled
	}
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
		got <- ended{o, waitResult(getCtx, run, &o)}
	}()
	var out SessionOutput
	select {
	case e := <-got:
		out, err = e.out, e.err
	case <-ctx.Done():
		// The root's cancellation cancels the tree; its end is awaited.
		// Its current run: a team's workflow may have continued as new.
		if cerr := c.CancelWorkflow(context.WithoutCancel(ctx), sid, ""); cerr != nil {
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

// waitRetryFor bounds how long waitResult goes on waiting for a result
// through failed waits: a server that answers nothing for that long is
// taken as gone.
const waitRetryFor = 5 * time.Minute

// waitResult waits for run's result. A wait that failed on its way to the
// server (a long poll the server did not answer in time, under load; a
// connection lost) says nothing of the run, which goes on: it is waited
// for again, after a pause that doubles up to 5 s, for waitRetryFor at
// most. Returning such a failure as the run's end made RunRoot stop
// following a run that then went on (TestKillWorkerMidTeam under load:
// "root workflow: context deadline exceeded").
func waitResult(ctx context.Context, run client.WorkflowRun, out *SessionOutput) error {
	err := run.Get(ctx, out)
	giveUp := time.Now().Add(waitRetryFor)
	for pause := 100 * time.Millisecond; err != nil && waitFailed(err) && time.Now().Before(giveUp); pause = min(2*pause, 5*time.Second) {
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		err = run.Get(ctx, out)
	}
	return err
}

// waitFailed reports whether err, from waiting for a workflow's result,
// is the wait's failure rather than the workflow's end: an RPC that timed
// out, could not reach the server or was refused for the server's load.
// The end of a workflow (failed, cancelled, timed out, terminated) is a
// *temporal.WorkflowExecutionError or another of the SDK's end errors.
func waitFailed(err error) bool {
	if _, ended := errors.AsType[*temporal.WorkflowExecutionError](err); ended {
		return false
	}
	_, timedOut := errors.AsType[*serviceerror.DeadlineExceeded](err)
	_, unreachable := errors.AsType[*serviceerror.Unavailable](err)
	_, refused := errors.AsType[*serviceerror.ResourceExhausted](err)
	return timedOut || unreachable || refused || errors.Is(err, context.DeadlineExceeded)
}

// rootSession returns the root's record and how many events its log has
// before this run: a new session is created; a stored one (req.Stored) is
// marked as the engine's (session.MetaEngine: the store's recovery of a
// dead process leaves it alone) and its log's length read.
func rootSession(ctx context.Context, st session.Store, req RootRequest, now time.Time) (session.Session, int64, error) {
	if req.Stored.ID == "" {
		sid := req.SessionID
		if sid == "" {
			sid = id.DescendingAt(id.Session, now)
		}
		root := session.Session{ID: sid, AgentName: req.Node.Name(), SourceType: req.Node.SourceType(),
			Title: title(req.Prompt), Status: session.StatusRunning, CreatedAt: now, UpdatedAt: now,
			Metadata: map[string]any{session.MetaEngine: EngineName}}
		if err := st.CreateSession(ctx, root); err != nil {
			return root, 0, fmt.Errorf("create root session: %w", err)
		}
		return root, 0, st.Flush(ctx)
	}
	root := req.Stored
	if root.Metadata[session.MetaEngine] != EngineName {
		err := st.UpdateSession(ctx, root.ID, func(s *session.Session) {
			if s.Metadata == nil {
				s.Metadata = map[string]any{}
			}
			s.Metadata[session.MetaEngine] = EngineName
		})
		if err != nil {
			return root, 0, fmt.Errorf("mark the root session: %w", err)
		}
	}
	if err := st.Flush(ctx); err != nil {
		return root, 0, err
	}
	recs, err := st.Events(ctx, root.ID, 0)
	if err != nil {
		return root, 0, fmt.Errorf("read the root's log: %w", err)
	}
	var after int64
	if len(recs) > 0 {
		after = recs[len(recs)-1].Seq
	}
	return root, after, nil
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
