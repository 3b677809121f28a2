package spawn

import (
	"context"
	"fmt"
	"time"

	"github.com/agentpool/agentpool/model"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/tool"
)

// Continuation is what a session goes on with when its run stopped (its
// process died) while tool calls of its tree waited for a person's
// answer (session.FindWaiting; pool.Pool.Continue makes it): its node
// runs again in the session, not from a prompt but from the tool calls
// its last model turn left open. Each of those calls gets a result: the
// one its log has (Waiting.Results: it ran, and does not run again), the
// answer to its approval request (Waiting.Requests: asked again with the
// stored id; the tool runs when allowed), or the end of its waiting
// child (Children: continued the same way, ContinueChild); then the node
// goes on as it would have (the next model turn, ...) to its end.
//
// A node that can continue a run says so (Continuer); under an Env (a
// durable engine, which continues its runs itself) nothing continues.
type Continuation struct {
	Waiting *session.Waiting
	// History is the session's stored conversation, up to and including
	// its last model turn, whose calls are open.
	History []model.Message
	// Children continue the waiting children (Waiting.Children), by
	// child session id.
	Children map[string]*ChildContinuation
}

// ChildContinuation is a waiting child, with the node that runs in it.
type ChildContinuation struct {
	Node     Node
	Continue *Continuation
}

// Continuer is a Node that can go on with a Continuation
// (Invocation.Continue); the agent is one. A node that is not one is
// never continued: its run is closed as interrupted.
type Continuer interface {
	Node
	CanContinue(c *Continuation) error
}

// ContinueChild goes on with the waiting child c of parent (a child of
// parent's continued session: Invocation.Continue), in parent's run: the
// child's node runs in its session with its Continuation, as Spawn runs a
// new child (a slot among parent's children, registered, its events
// wrapped for parent's stream, the session's final record), without
// creating it or announcing it again (its spawn_session_start is in
// parent's log and nothing is taken from the run's spawn budget), and its
// end is emitted as Spawn emits it (spawn_session_end, the subagent/end
// hook). It returns the child's outcome, as Spawn would have.
func ContinueChild(ctx context.Context, parent *Invocation, c *ChildContinuation) (Child, error) {
	rt := parent.Runtime
	w := c.Continue.Waiting
	sem := parent.h.slots(rt.limits.MaxChildren)
	select {
	case sem <- struct{}{}:
	case <-ctx.Done():
		return Child{}, fmt.Errorf("cannot continue %s: %w", w.Session.AgentName, context.Cause(ctx))
	}
	start := w.Start
	inv := &Invocation{
		Session: w.Session, RunID: w.RunID, History: c.Continue.History, Runtime: rt,
		ToolCallID: start.ToolCallID, Mechanism: start.SpawnMechanism, run: parent.run,
		Toolsets: parent.Toolsets, Continue: c.Continue, budgets: parent.budgets,
	}
	inv.wrap = wrapSink{parent: parent.Sink, child: inv, path: []string{w.Session.ID}}
	inv.Sink = &inv.wrap
	cctx, stop := inv.h.runContext(ctx)
	if !rt.register(inv) {
		stop(nil)
		<-sem
		return Child{}, fmt.Errorf("cannot continue %s: session %s runs already", w.Session.AgentName, w.Session.ID)
	}
	busy := rt.busyCounter(w.Session.AgentName)
	busy.Add(1)
	defer releaseSlot(sem, busy)
	req := Request{Node: c.Node, ToolCallID: start.ToolCallID, Mechanism: start.SpawnMechanism}
	info := StartInfo{
		ChildSessionID: w.Session.ID, ParentSessionID: parent.Session.ID, Name: w.Session.AgentName,
		SourceType: w.Session.SourceType, Depth: w.Session.Depth, Mechanism: start.SpawnMechanism,
		RunMode: start.RunMode, ParentAgent: parent.Session.AgentName,
	}
	// Its duration counts from its creation: the wait across the restart
	// is part of it.
	started := w.Session.CreatedAt
	if started.IsZero() {
		started = time.Now()
	}
	return Child{SessionID: w.Session.ID, Result: rt.runChild(cctx, stop, parent, inv, &req, &info, started)}, nil
}

// ContinuedResult is the result of a delegation call (task, a worker,
// delegate_to, ask_agent) whose waiting child ContinueChild continued: the
// result the call would have had.
func ContinuedResult(c Child, err error) tool.Result {
	if err != nil {
		return tool.Errorf("%v", err)
	}
	return childResult(c)
}
