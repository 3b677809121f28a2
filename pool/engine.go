package pool

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/id"
	"github.com/agentpool/agentpool/internal/detach"
	"github.com/agentpool/agentpool/model"
	"github.com/agentpool/agentpool/record"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/spawn"
)

// Engine runs root sessions out of this process: a durable execution
// engine (the CLI gives the pool one built with package durable when the
// manifest says execution: {engine: temporal}). Options.Engine.
type Engine interface {
	// RunRoot runs run's node in its session, which is in the store and
	// marked running, hands sink every event of the session's tree as it
	// is stored (the engine's workers store them, the sink does not), and
	// returns how the run ended once it and its children have ended and
	// their last events were handed on. A cancellation of ctx cancels
	// the run and its tree, which end aborted. The error is non-nil when
	// the run could not be started or its end not be learnt.
	RunRoot(ctx context.Context, run EngineRun, sink event.Sink) (spawn.Result, error)
}

// EngineRun is a root run given to an Engine.
type EngineRun struct {
	Node spawn.Node
	// Session is the root's record as stored: a new session, or a
	// continued one (then History is its conversation so far).
	Session session.Session
	RunID   string
	Prompt  string
	History []model.Message
}

// runOnEngine runs inv's root on the pool's engine. The engine's workers
// store the events: the run's recorder hands them to its watchers and to
// the caller's sink without storing them (record.Recorder.Relay); what
// the pool itself emits (a hook's events at session start and end) goes
// through the recorder as in a run in this process. inv keeps the session
// registered in the runtime (Runtime.Running) for the run's duration.
func (p *Pool) runOnEngine(ctx context.Context, node spawn.Node, inv *spawn.Invocation, rec *record.Recorder, started time.Time) spawn.RunEnd {
	// Cancel of the root ends the run, as in this process. (Its children
	// run on the workers, where Cancel does not reach yet.)
	ctx, stop := inv.CancelContext(ctx)
	defer stop()
	history := inv.History
	if early := inv.Injected(); len(early) > 0 {
		// What session/start injected reaches the first model request, as
		// in this process: with the conversation the workflow is given.
		msgs := p.storeInjected(ctx, inv.Session.ID, early)
		history = append(history[:len(history):len(history)], msgs...)
	}
	var ended atomic.Bool // the root's stream_complete or run_error was handed on
	relay := event.SinkFunc(func(e event.Event) {
		switch e.(type) {
		case event.StreamComplete, event.RunError:
			ended.Store(true)
		}
		rec.Relay(e)
	})
	// The root's start is counted here; every session's end, the root's
	// too, by the workers that run it (durable.Activities.Metrics).
	p.obs.SessionStarted(ctx, node.Name(), inv.Session.Depth)
	res, err := p.engine.RunRoot(ctx, EngineRun{Node: node, Session: inv.Session, RunID: inv.RunID, Prompt: inv.Prompt, History: history}, relay)
	// Injections during the run cannot reach the workers: they are kept in
	// the conversation, as what a run in this process could not deliver.
	p.storeInjected(ctx, inv.Session.ID, p.rt.Release(inv))
	persist := detach.Context(ctx)
	if err != nil {
		res = spawn.Result{StopReason: event.StopError, Err: err}
		p.log.Warn("run on the execution engine", "session", inv.Session.ID, "err", err)
		if !ended.Load() {
			// The stream ends, as every root's does; the engine did not
			// store this one, so the recorder does.
			rec.Emit(event.RunError{Message: err.Error(), Code: "engine", RunID: inv.RunID, AgentName: node.Name()})
		}
		// A run that did not end on the engine is not left running.
		uerr := p.store.UpdateSession(persist, inv.Session.ID, func(s *session.Session) {
			if s.Status != session.StatusRunning {
				return
			}
			s.Status, s.StopReason = session.StatusError, event.StopError
			if s.Metadata == nil {
				s.Metadata = map[string]any{}
			}
			s.Metadata["error"] = err.Error()
			s.DurationMS = time.Since(started).Milliseconds()
		})
		if uerr != nil {
			p.log.Warn("store session end", "session", inv.Session.ID, "err", uerr)
		}
	}
	end := spawn.RunEnd{Result: res}
	// The totals are the record's after the run, as in this process.
	if s, gerr := p.store.GetSession(persist, inv.Session.ID); gerr == nil {
		end.TotalUsage, end.TotalCost = s.TotalUsage, s.TotalCost
	} else if !errors.Is(gerr, context.Canceled) {
		p.log.Warn("read the session's end", "session", inv.Session.ID, "err", gerr)
	}
	return end
}

// storeInjected stores injected content as the session's synthetic user
// messages and returns them.
func (p *Pool) storeInjected(ctx context.Context, sid string, items []string) []model.Message {
	if len(items) == 0 {
		return nil
	}
	msgs := make([]model.Message, len(items))
	stored := make([]session.Message, len(items))
	for i, c := range items {
		msgs[i] = model.Message{Role: model.RoleUser, Parts: []model.Part{{Kind: model.PartText, Text: c}}, Synthetic: true}
		stored[i] = session.Message{ID: id.Ascending(id.Message), SessionID: sid, CreatedAt: time.Now(), Message: msgs[i]}
	}
	if err := p.store.AppendMessages(detach.Context(ctx), sid, stored...); err != nil {
		p.log.Warn("store injections", "session", sid, "err", err)
	}
	return msgs
}

// EngineCanceller is an Engine that can cancel one session of its runs
// on its own (Pool.Cancel asks it for a session that the pool's runtime
// does not run here): a child ends aborted with its subtree while its
// parent goes on; a root's whole run ends. The channel is closed once the
// session's run has ended. A session the engine does not run errors.Is
// spawn.ErrRunsElsewhere.
type EngineCanceller interface {
	Cancel(ctx context.Context, sessionID, by string) (<-chan struct{}, error)
}

// EngineMessenger is an Engine that can deliver a person's message to a
// running session of its runs (Pool.Message asks it for a session that
// the pool's runtime does not run here). A session the engine does not
// run errors.Is spawn.ErrRunsElsewhere; one that has ended,
// spawn.ErrNotRunning.
type EngineMessenger interface {
	Message(ctx context.Context, sessionID, by, text string) error
}
