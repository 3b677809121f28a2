package durable

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/agentpool/agentpool/agent"
	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/model"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/spawn"
	"github.com/agentpool/agentpool/tool"
	"github.com/agentpool/agentpool/tracing"
)

// errTooLarge is the application error type of a turn whose response
// passed the agent's MaxResponseBytes (not retried).
const errTooLarge = "ResponseTooLarge"

// HeartbeatEvery is how often a running model or tool activity heartbeats.
var HeartbeatEvery = 2 * time.Second

// Activities are the steps of a session's workflow that touch the world:
// the store, the models, the tools. Every worker of a pool registers them
// with the pool's nodes and the shared store.
type Activities struct {
	Store  session.Store
	Lookup func(name string) (spawn.Node, bool)
	// Runtime is the pool's runtime, whose Lifecycle (the subagent
	// hooks, and the session hooks of the same value) the engine calls;
	// nil: none.
	Runtime *spawn.Runtime
	// Metrics records the starts of the children this worker creates and
	// the ends of the sessions it ends (the worker pool's metrics,
	// pool.Pool.SessionMetrics); nil: none. A root's start is counted
	// where it is submitted.
	Metrics SessionMetrics

	// onWorker: the activities were registered on a worker
	// (Engine.Register), whose server a turn asks whether its attempt is
	// current before it writes (attemptCurrent). The SDK's test
	// environment has no server to ask.
	onWorker bool

	rtOnce sync.Once
	rt     *spawn.Runtime // the hooks' runtime when Runtime is nil

	fence turnFence // local-activity turns against their run's end
}

// SessionMetrics records session starts and ends in a pool's metrics
// (pool.Pool.SessionMetrics is one).
type SessionMetrics interface {
	SessionStarted(ctx context.Context, agent string, depth int)
	SessionEnded(ctx context.Context, agent string, stop event.StopReason, cost float64, d time.Duration)
}

// Write writes what a workflow has pending (see Pending).
func (a *Activities) Write(ctx context.Context, p Pending) (int64, error) {
	return a.write(ctx, p)
}

// Create creates a child session and those of in.More, in order (a retry
// finds them created), then writes p, which ends with their
// spawn_session_start events.
func (a *Activities) Create(ctx context.Context, in CreateInput) (int64, error) {
	var existed map[string]bool
	for _, s := range append([]session.Session{in.Session}, in.More...) {
		err := a.Store.CreateSession(ctx, s)
		if errors.Is(err, session.ErrExists) {
			if existed == nil {
				existed = map[string]bool{}
			}
			existed[s.ID] = true
			continue
		}
		if err != nil {
			return 0, err
		}
		if a.Metrics != nil {
			a.Metrics.SessionStarted(ctx, s.AgentName, s.Depth)
		}
	}
	p := in.Pending
	if existed != nil {
		var err error
		if p.Events, err = a.unstarted(ctx, p.SessionID, in.Since, p.Events, existed); err != nil {
			return 0, err
		}
	}
	return a.write(ctx, p)
}

// unstarted returns evs without the spawn_session_start of each session of
// existed whose start the log of sid has after since: an earlier attempt,
// or a workflow task that a dead worker began, created it and wrote its
// start, maybe before the write's AfterSeq (CreateInput.Since).
func (a *Activities) unstarted(ctx context.Context, sid string, since int64, evs []json.RawMessage, existed map[string]bool) ([]json.RawMessage, error) {
	recs, err := a.Store.Events(ctx, sid, since)
	if err != nil {
		return nil, err
	}
	started := map[string]bool{}
	for _, r := range recs {
		if s, ok := r.Event.(event.SpawnSessionStart); ok && existed[s.ChildSessionID] {
			started[s.ChildSessionID] = true
		}
	}
	out := make([]json.RawMessage, 0, len(evs))
	for _, raw := range evs {
		if e, err := event.Decode(raw); err == nil {
			if s, ok := e.(event.SpawnSessionStart); ok && started[s.ChildSessionID] {
				continue
			}
		}
		out = append(out, raw)
	}
	return out, nil
}

// write writes p and returns how many events the log has after it. The
// messages go before the events: an attempt that finds the events written
// knows the messages are.
//
// It looks at the log past p.AfterSeq first, always: an activity's first
// attempt may follow a workflow task lost with its worker, whose local
// activities (Create, End, a local turn) wrote some of p before the task
// done again took it. The log holds nothing past p.AfterSeq otherwise,
// and the look is one indexed read that finds nothing; the messages are
// looked at only when something was found (or p.Check says so).
func (a *Activities) write(ctx context.Context, p Pending) (int64, error) {
	after := p.AfterSeq + int64(len(p.Events))
	if p.empty() {
		return after, nil
	}
	for _, end := range p.Ends {
		if err := a.End(ctx, end); err != nil {
			return 0, fmt.Errorf("the end of child session %s: %w", end.Pending.SessionID, err)
		}
	}
	if len(p.Events) == 0 && len(p.Messages) == 0 {
		return after, nil
	}
	evs := p.Events
	msgs := p.Messages
	recs, err := a.Store.Events(ctx, p.SessionID, p.AfterSeq)
	if err != nil {
		return 0, err
	}
	if len(recs) > 0 || p.Check || activity.GetInfo(ctx).Attempt > 1 {
		evs = unwritten(recs, evs)
		if len(msgs) > 0 {
			if msgs, err = a.unstored(ctx, p.SessionID, msgs); err != nil {
				return 0, err
			}
		}
	}
	if len(msgs) > 0 {
		if err := a.Store.AppendMessages(ctx, p.SessionID, msgs...); err != nil {
			return 0, err
		}
	}
	if len(evs) > 0 {
		decoded := make([]event.Event, len(evs))
		for i, raw := range evs {
			e, err := event.Decode(raw)
			if err != nil {
				return 0, temporal.NewNonRetryableApplicationError(fmt.Sprintf("decode event: %v", err), "BadEvent", err)
			}
			decoded[i] = e
		}
		if err := a.Store.AppendEvents(ctx, p.SessionID, decoded...); err != nil {
			return 0, err
		}
	}
	// Committed before the workflow goes on: a child's events must not
	// reach the log before its parent's spawn_session_start.
	return after, a.Store.Flush(ctx)
}

// unwritten returns the events of evs that recs (the log after the write's
// AfterSeq) does not hold, matched by their encoding, each record once. A
// write that ran before, in full or in part, wrote the same events; but an
// earlier attempt of a local activity (Create) may have carried fewer:
// its workflow task timed out, or its worker died, and the task that ran
// it again had taken more events (another child's end) before it. A
// count would skip the new events and write the old ones again.
func unwritten(recs []session.Record, evs []json.RawMessage) []json.RawMessage {
	if len(recs) == 0 {
		return evs
	}
	have := make(map[string]int, len(recs))
	for _, r := range recs {
		have[string(encode(r.Event))]++
	}
	var out []json.RawMessage
	for _, raw := range evs {
		// The pending event as the store gives it back (decoded, then
		// encoded again), so that the two encodings compare.
		k := string(raw)
		if e, err := event.Decode(raw); err == nil {
			k = string(encode(e))
		}
		if have[k] > 0 {
			have[k]--
			continue
		}
		out = append(out, raw)
	}
	return out
}

// unstored returns the messages of msgs whose ids the session's
// conversation does not have.
func (a *Activities) unstored(ctx context.Context, sid string, msgs []session.Message) ([]session.Message, error) {
	have, err := a.Store.Messages(ctx, sid)
	if err != nil {
		return nil, err
	}
	ids := make(map[string]bool, len(have))
	for _, m := range have {
		ids[m.ID] = true
	}
	var out []session.Message
	for _, m := range msgs {
		if !ids[m.ID] {
			out = append(out, m)
		}
	}
	return out, nil
}

func (a *Activities) agent(name string) (*agent.Agent, error) {
	n, ok := a.Lookup(name)
	if !ok {
		return nil, temporal.NewNonRetryableApplicationError("unknown node "+name, "UnknownNode", nil)
	}
	ag, ok := n.(*agent.Agent)
	if !ok {
		return nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf("node %s is no agent", name), "UnknownNode", nil)
	}
	return ag, nil
}

// Turn runs one model turn: it writes what is pending, streams the model
// (heartbeating), then stores the assistant message and the turn's events,
// in that order. A retry whose message is stored returns it without
// calling the model (see the package doc).
//
// Run as a local activity (SessionInput.TurnLocal), every attempt looks
// for an earlier one's writes first: a workflow task lost with its
// worker is done again elsewhere, and runs the turn again as attempt 1.
// Its writes go through the fence (turnFence): none after its run's end.
func (a *Activities) Turn(ctx context.Context, in TurnInput) (TurnOutput, error) {
	info := activity.GetInfo(ctx)
	if !info.IsLocalActivity {
		return a.turn(ctx, in, info.Attempt > 1, nil)
	}
	r, leave := a.fence.enter(runKey{in.Pending.SessionID, in.RunID})
	defer leave()
	if !a.onWorker {
		return a.turn(ctx, in, true, r)
	}
	wctx, stop := watchCancel(ctx)
	defer stop()
	out, err := a.turn(wctx, in, true, r)
	if err != nil && errors.Is(context.Cause(wctx), errCancelAsked) {
		// Not retried: the attempt after it would call the model again
		// before the workflow knows of the cancel.
		return out, temporal.NewNonRetryableApplicationError(errCancelAsked.Error(), "CancelAsked", err)
	}
	return out, err
}

// errCancelAsked is the cause of a local-activity turn's cancel by
// watchCancel.
var errCancelAsked = errors.New("the session's workflow was asked to cancel")

// watchCancel returns ctx, cancelled (cause errCancelAsked) as well when
// the server says that the workflow of the local activity in ctx was
// asked to cancel: it asks every HeartbeatEvery. A workflow task that
// runs a local activity learns of a cancel only when the SDK ends the
// task to keep it alive (at 80 % of its timeout, 8 s by default); a turn
// run as an activity learned of it at its next heartbeat (2 s). The
// turn's model call then fails; the task's decision after it is refused
// by the server, which holds the cancel, and the task done again, which
// has the cancel, ends the session aborted without running the turn.
func watchCancel(ctx context.Context) (context.Context, func()) {
	info := activity.GetInfo(ctx)
	c := activity.GetClient(ctx)
	wctx, cancel := context.WithCancelCause(ctx)
	stop := every(wctx, func() bool {
		d, err := c.DescribeWorkflow(wctx, info.WorkflowExecution.ID, info.WorkflowExecution.RunID)
		if err == nil && d.RawResponse.GetWorkflowExtendedInfo().GetCancelRequested() {
			cancel(errCancelAsked)
			return false
		}
		return true
	})
	return wctx, func() { cancel(nil); stop() }
}

// turn is Turn; retry says that an earlier attempt may have written. Its
// writes go through run when it is not nil.
func (a *Activities) turn(ctx context.Context, in TurnInput, retry bool, run *fencedRun) (TurnOutput, error) {
	fenced := func(fn func() error) error {
		if run == nil {
			return fn()
		}
		return run.write(fn)
	}
	in.Pending.Check = in.Pending.Check || retry
	var after int64
	var out TurnOutput
	done := false
	err := fenced(func() (err error) {
		if after, err = a.write(ctx, in.Pending); err != nil || !retry {
			return err
		}
		out, done, err = a.turnDone(ctx, in.Pending.SessionID, after, in)
		return err
	})
	if done || err != nil {
		return out, err
	}
	sid := in.Pending.SessionID
	ag, err := a.agent(in.Agent)
	if err != nil {
		return TurnOutput{}, err
	}
	stop := heartbeat(ctx)
	var buf bufSink
	t, err := ag.StreamTurn(tracing.InConversation(ctx, in.Conversation), &in.Request, &buf)
	stop()
	if err != nil {
		if errors.Is(err, agent.ErrResponseTooLarge) {
			return TurnOutput{}, temporal.NewNonRetryableApplicationError(err.Error(), errTooLarge, err)
		}
		return TurnOutput{}, err
	}
	if a.onWorker {
		if err := attemptCurrent(ctx); err != nil {
			return TurnOutput{}, err
		}
	}
	msg := session.Message{ID: in.MessageID, SessionID: sid, AgentName: in.Agent, CreatedAt: in.CreatedAt, Message: t.Message}
	err = fenced(func() error {
		if err := a.Store.AppendMessages(ctx, sid, msg); err != nil {
			return err
		}
		if err := a.Store.AppendEvents(ctx, sid, buf.evs...); err != nil {
			return err
		}
		return a.Store.Flush(ctx)
	})
	if err != nil {
		return TurnOutput{}, err
	}
	t.Stored = true
	return TurnOutput{Turn: t, Events: int64(len(buf.evs))}, nil
}

// attemptCurrent asks the server, with a heartbeat of its own, whether this
// attempt of a heartbeating activity is still the one its workflow waits
// for, before the activity writes what it made. An attempt the server timed
// out (its heartbeats came late, under load) is over for the workflow,
// which has gone on: with a retry that makes the same writes, or, when the
// workflow was cancelled meanwhile (no retry then), with the session's end.
// Its Go code does not know and goes on; a turn that then stored its
// message and part events put them after the session's run_error
// (TestCancelledTurnPastItsHeartbeatTimeoutWritesNothing). The server
// answers such an attempt's heartbeat NotFound; a cancel requested
// (CanceledError) is no reason to stop: the workflow waits for the activity
// (WaitForCancellation), and a turn that finished first is a step that
// completed. The heartbeat also starts the heartbeat timeout again: the
// server cannot time the attempt out while its writes run (they take far
// less). Any other error says nothing sure: the turn fails, and is retried,
// rather than writing. A local activity, or a call outside an activity (a
// test calling it), has nothing to ask.
func attemptCurrent(ctx context.Context) error {
	if !activity.IsActivity(ctx) {
		return nil
	}
	info := activity.GetInfo(ctx)
	if info.IsLocalActivity || info.HeartbeatTimeout <= 0 {
		return nil
	}
	// The activity's ctx may be cancelled already (the cancel came with a
	// batched heartbeat): the question still needs an answer.
	hctx, stop := context.WithTimeout(context.WithoutCancel(ctx), info.HeartbeatTimeout)
	defer stop()
	err := activity.GetClient(ctx).RecordActivityHeartbeat(hctx, info.TaskToken)
	if err == nil || temporal.IsCanceledError(err) {
		return nil
	}
	return fmt.Errorf("this attempt is no longer current: %w", err)
}

// turnDone finds the turn of in stored by an earlier attempt.
func (a *Activities) turnDone(ctx context.Context, sid string, after int64, in TurnInput) (TurnOutput, bool, error) {
	have, err := a.Store.Messages(ctx, sid)
	if err != nil {
		return TurnOutput{}, false, err
	}
	for _, m := range have {
		if m.ID != in.MessageID {
			continue
		}
		recs, err := a.Store.Events(ctx, sid, after)
		if err != nil {
			return TurnOutput{}, false, err
		}
		n := int64(len(recs))
		if n == 0 {
			// The attempt died between its two writes: the message's
			// parts, as events.
			evs := partEvents(m.Message)
			if err := a.Store.AppendEvents(ctx, sid, evs...); err != nil {
				return TurnOutput{}, false, err
			}
			n = int64(len(evs))
		}
		finish := model.FinishStop
		if len(m.ToolCalls()) > 0 {
			finish = model.FinishToolCalls
		}
		// The usage of the first attempt is not known here.
		return TurnOutput{Turn: spawn.Turn{Message: m.Message, Finish: finish, Stored: true}, Events: n}, true, a.Store.Flush(ctx)
	}
	return TurnOutput{}, false, nil
}

// partEvents are the part events of a message, one delta per part.
func partEvents(m model.Message) []event.Event {
	var out []event.Event
	for i, p := range m.Parts {
		switch p.Kind {
		case model.PartText, model.PartThinking:
			kind := event.PartText
			if p.Kind == model.PartThinking {
				kind = event.PartThinking
			}
			out = append(out, event.PartStart{Index: i, Part: event.Part{PartKind: kind}},
				event.PartDelta{Index: i, Delta: event.Delta{PartDeltaKind: kind, ContentDelta: p.Text}})
		case model.PartToolCall:
			out = append(out, event.PartStart{Index: i, Part: event.Part{PartKind: event.PartToolCall, ToolCallID: p.ToolCallID, ToolName: p.ToolName}},
				event.PartDelta{Index: i, Delta: event.Delta{PartDeltaKind: event.PartToolCall, ArgsDelta: string(p.Args), ToolCallID: p.ToolCallID}})
		default:
			continue
		}
		out = append(out, event.PartEnd{Index: i})
	}
	return out
}

// ToolOutput is a tool call's result and the log's length after the
// activity's write.
type ToolOutput struct {
	Result   tool.Result `json:"result"`
	AfterSeq int64       `json:"after_seq"`
}

// Tool writes what is pending, then runs one tool call of the agent
// (heartbeating).
func (a *Activities) Tool(ctx context.Context, in ToolInput) (ToolOutput, error) {
	after, err := a.write(ctx, in.Pending)
	if err != nil {
		return ToolOutput{}, err
	}
	ag, err := a.agent(in.Agent)
	if err != nil {
		return ToolOutput{}, err
	}
	t, ok := ag.Tool(in.Call.Name)
	if !ok {
		// A tool of the agent's toolsets (an MCP server's), which the
		// worker's pool runs.
		t, ok = ag.ToolsetTool(ctx, in.Call.Name)
	}
	if !ok {
		return ToolOutput{Result: tool.Errorf("unknown tool %q", in.Call.Name), AfterSeq: after}, nil
	}
	stop := heartbeat(ctx)
	res := tool.Run(tracing.InConversation(ctx, in.Conversation), t, in.Call)
	stop()
	return ToolOutput{Result: res, AfterSeq: after}, nil
}

// Toolsets lists the tools of the agent's toolsets on this worker (an
// MCP server is started here on first use).
func (a *Activities) Toolsets(ctx context.Context, name string) ([]agent.ToolsetList, error) {
	ag, err := a.agent(name)
	if err != nil {
		return nil, err
	}
	stop := heartbeat(ctx)
	defer stop()
	return ag.ListToolsets(ctx), nil
}

// End writes what is pending and the session's final record (once: a
// retry finds the record written).
func (a *Activities) End(ctx context.Context, in EndInput) error {
	// A turn of this run cancelled on its way (a local activity's Go code
	// goes on) writes nothing from now on; one writing waits.
	a.fence.end(runKey{in.Pending.SessionID, in.RunID})
	if in.CloseStrays {
		if err := a.closeStrays(ctx, in.Pending.SessionID); err != nil {
			return err
		}
	}
	// Looked at first: End is a local activity, run again as attempt 1
	// by the task done again after a lost workflow task (a killed worker,
	// or a task the server refused), whose run may have written it all.
	in.Pending.Check = true
	if _, err := a.write(ctx, in.Pending); err != nil {
		return err
	}
	o := in.Output
	retry := activity.GetInfo(ctx).Attempt > 1
	var ended string // the agent whose session this call ended
	err := a.Store.UpdateSession(ctx, in.Pending.SessionID, func(s *session.Session) {
		again := takeBackEnd(s, in.RunID)
		if retry && !again && s.Status != session.StatusRunning {
			return
		}
		if !again {
			ended = s.AgentName
		}
		s.Status = session.StatusFromStop(o.StopReason)
		s.StopReason = o.StopReason
		s.Usage.Add(o.Usage)
		s.Cost += o.Cost
		s.TotalUsage.Add(o.TotalUsage)
		s.TotalCost += o.TotalCost
		s.DurationMS = o.DurationMS
		if o.Error != "" || in.RunID != "" {
			if s.Metadata == nil {
				s.Metadata = map[string]any{}
			}
		}
		if o.Error != "" {
			s.Metadata["error"] = o.Error
		}
		if in.RunID != "" {
			raw, _ := json.Marshal(endedRun{Run: in.RunID, Usage: o.Usage, Cost: o.Cost, TotalUsage: o.TotalUsage, TotalCost: o.TotalCost})
			s.Metadata[metaEndedRun] = string(raw)
		}
	})
	if err != nil {
		return err
	}
	if err := a.Store.Flush(ctx); err != nil {
		return err
	}
	if ended != "" && a.Metrics != nil {
		a.Metrics.SessionEnded(ctx, ended, o.StopReason, o.Cost, time.Duration(o.DurationMS)*time.Millisecond)
	}
	return nil
}

// strayError says why a child session ended that never ran.
const strayError = "created but never started: the worker that created it was lost, and its parent's run ended before it started it"

// closeStrays ends the children of sid still stored running, with a
// spawn_session_end each in sid's log. Called at the end of a run that
// did not complete, when every child the run started has ended (its
// workflow waits for them): a child still running was created by a
// workflow task that a dead worker began, and the task done again took
// another way (the run was cancelled meanwhile), so nothing would end
// it. A completed run starts every child its lost tasks created: it names
// them alike (childNames, mover.names).
func (a *Activities) closeStrays(ctx context.Context, sid string) error {
	kids, err := a.Store.ListSessions(ctx, session.ListOptions{ParentID: sid})
	if err != nil {
		return err
	}
	var ends []event.Event
	for _, k := range kids {
		if k.Status != session.StatusRunning {
			continue
		}
		ended := false
		err := a.Store.UpdateSession(ctx, k.ID, func(s *session.Session) {
			if s.Status != session.StatusRunning {
				return
			}
			ended = true
			s.Status, s.StopReason = session.StatusAborted, event.StopAborted
			if s.Metadata == nil {
				s.Metadata = map[string]any{}
			}
			s.Metadata["error"] = strayError
		})
		if err != nil {
			return err
		}
		if ended {
			ends = append(ends, event.SpawnSessionEnd{ChildSessionID: k.ID, ParentSessionID: sid, SourceName: k.AgentName,
				SourceType: k.SourceType, Depth: k.Depth, StopReason: event.StopAborted, Error: strayError})
		}
	}
	if len(ends) == 0 {
		return nil
	}
	return a.Store.AppendEvents(ctx, sid, ends...)
}

// metaEndedRun is the session metadata key under which End keeps what the
// last run's end added to the session (an endedRun, as JSON).
const metaEndedRun = "agentpool.ended_run"

// endedRun is what a run's end added to its session's figures.
type endedRun struct {
	Run        string      `json:"run"`
	Usage      event.Usage `json:"usage"`
	Cost       float64     `json:"cost"`
	TotalUsage event.Usage `json:"total_usage"`
	TotalCost  float64     `json:"total_cost"`
}

// takeBackEnd takes from s what an earlier end of run added to it, and
// reports whether there was one. A run's end can be written twice: by a
// local activity that a lost workflow task (its worker killed, or a task
// the server refused because a message came while it ran) had run and
// that the task done again runs again, as attempt 1. The second end is
// the run's: it may follow turns that the first did not (the message was
// read), so it replaces the first rather than adding to it.
func takeBackEnd(s *session.Session, run string) bool {
	raw, _ := s.Metadata[metaEndedRun].(string)
	var prev endedRun
	if run == "" || raw == "" || json.Unmarshal([]byte(raw), &prev) != nil || prev.Run != run {
		return false
	}
	s.Usage.Sub(prev.Usage)
	s.TotalUsage.Sub(prev.TotalUsage)
	s.Cost -= prev.Cost
	s.TotalCost -= prev.TotalCost
	delete(s.Metadata, "error")
	return true
}

// heartbeat records a heartbeat every HeartbeatEvery until stop, so that
// the server notices a dead worker and the activity notices a
// cancellation.
func heartbeat(ctx context.Context) (stop func()) {
	return every(ctx, func() bool {
		activity.RecordHeartbeat(ctx)
		return true
	})
}

// every calls fn every HeartbeatEvery, in a goroutine of its own, until
// fn returns false, ctx ends or stop is called; stop returns once the
// goroutine has.
func every(ctx context.Context, fn func() bool) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(HeartbeatEvery)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				if !fn() {
					return
				}
			case <-done:
				return
			case <-ctx.Done():
				return
			}
		}
	})
	return func() { close(done); wg.Wait() }
}

// bufSink keeps a turn's events for one append.
type bufSink struct{ evs []event.Event }

func (b *bufSink) Emit(e event.Event) { b.evs = append(b.evs, e) }

// encode marshals events for a Pending.
func encode(e event.Event) json.RawMessage {
	b, err := event.Marshal(e)
	if err != nil {
		// Every event kind marshals; one that does not is a bug to see.
		b, _ = event.Marshal(event.Custom{EventType: "encode_error", Source: "durable", EventData: map[string]any{"kind": string(e.Kind()), "error": err.Error()}})
	}
	return b
}
