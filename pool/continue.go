package pool

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/model"
	"github.com/agentpool/agentpool/record"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/spawn"
)

// Runs that go on after their process died while tool calls of their tree
// waited for a person's answer (docs/approvals.md, Durable): the stored
// requests are asked again, and the tree goes on from its open calls.

// ErrNotWaiting is Continue's error for a session whose tree has no tool
// call that waits for an answer (it ended, or another process went on
// with it first).
var ErrNotWaiting = errors.New("no tool call of the session's tree waits for an answer")

// ErrEngineContinues is Continue's error in a pool whose roots run on an
// Engine: the engine's runs outlive this process, and the engine goes on
// with them itself.
var ErrEngineContinues = errors.New("the pool's runs are its engine's, which continues them itself")

// Waiting lists the root sessions of the store whose run stopped (its
// process died, or runs elsewhere) while a tool call of their tree waited
// for a person's answer (session.FindWaiting), newest first: what
// Continue goes on with. Roots that a durable engine runs, and those this
// pool runs now, are not listed.
func (p *Pool) Waiting(ctx context.Context) ([]string, error) {
	if p.engine != nil {
		return nil, nil
	}
	roots, err := p.store.ListSessions(ctx, session.ListOptions{RootsOnly: true})
	if err != nil {
		return nil, err
	}
	var out []string
	for _, r := range roots {
		w, err := p.waiting(ctx, r)
		if err != nil {
			return out, err
		}
		if w != nil {
			out = append(out, r.ID)
		}
	}
	return out, nil
}

// WaitingRun returns the run of root session id that Continue would go on
// with (one that Waiting lists): "" when the session is a child, ended,
// runs here or on an engine, or nothing of its tree waits. A front end
// that opens one session (ACP's session/load) asks about it alone rather
// than listing every root of the store.
func (p *Pool) WaitingRun(ctx context.Context, id string) (string, error) {
	if p.engine != nil {
		return "", nil
	}
	s, err := p.store.GetSession(ctx, id)
	if err != nil {
		return "", err
	}
	if s.ParentID != "" {
		return "", nil
	}
	w, err := p.waiting(ctx, s)
	if err != nil || w == nil {
		return "", err
	}
	return w.RunID, nil
}

// waiting is the waiting tree of root r; nil when Continue would not go
// on with it.
func (p *Pool) waiting(ctx context.Context, r session.Session) (*session.Waiting, error) {
	if r.Status != session.StatusRunning || r.Metadata[session.MetaEngine] != nil || p.rt.Running(r.ID) {
		return nil, nil
	}
	w, err := session.FindWaiting(ctx, p.store, r.ID)
	if err != nil {
		return nil, fmt.Errorf("read the run of %s: %w", r.ID, err)
	}
	return w, nil
}

// Continue goes on with the run of root session id that stopped while
// tool calls of its tree waited for a person's answer (see Waiting): the
// tree is claimed as a run claims its session (a *session.RunningError
// when another run, in this process or another one, holds it: the first
// to claim goes on with it); what its run left open that does not wait is
// closed as CloseInterrupted would (session.Waiting.CloseRest); then each
// waiting session goes on from its open tool calls (spawn.Continuation):
// a waiting call's stored request is asked again with its id (the front
// ends attached to the pool's approval broker show it, and the first
// answer wins), the call runs when allowed or gets the rejection as its
// result, its agent goes on to its final answer, which is the result of
// its parent's delegation call, and so on up to the root, which ends as a
// run ends. Calls that have a result in the log keep it: nothing that
// completed runs again.
//
// sink gets the stored events of the run up to now (the stream its
// consumer saw live, as session.ReplayTree merges it), then the events of
// the run as it goes on; the pool's processor records them as it records
// every run (its watchers, such as an OpenCode server's projection, see
// both). RunResult is how the root's run ended.
//
// The error is ErrNotWaiting when nothing waits (its answer came first,
// from the process that runs it); a tree that cannot go on (a waiting
// session whose node is no agent any more, or whose conversation does
// not end with the waiting calls) is closed as interrupted
// (session.CloseInterrupted), as a store's recovery would have, and the
// error says why.
func (p *Pool) Continue(ctx context.Context, id string, sink event.Sink) (RunResult, error) {
	return p.ContinueRelayed(ctx, id, sink, nil)
}

// ContinueRelayed is Continue that calls relayed once the stored events of
// the run were handed to sink and to the processor's watchers, before the
// run goes on (not at all when it does not go on). A server that serves
// transcripts from its watchers waits for it before it answers clients,
// so that none reads the stored turn of a run whose events then come
// again under the live ids.
func (p *Pool) ContinueRelayed(ctx context.Context, id string, sink event.Sink, relayed func()) (RunResult, error) {
	if p.engine != nil {
		return RunResult{}, ErrEngineContinues
	}
	now := time.Now()
	return p.runClaimed(ctx, id, false, false, func(ctx context.Context) (rootRun, error) {
		c, node, err := p.continuation(ctx, id)
		if err != nil {
			return rootRun{}, err
		}
		rec := p.proc.Open(ctx, id, sink)
		if err := p.relayStored(ctx, rec, id, c.Waiting.RunID); err != nil {
			return rootRun{}, err
		}
		if relayed != nil {
			relayed()
		}
		inv, err := p.rt.NewRoot(c.Waiting.Session, c.Waiting.RunID, "", c.History, rec)
		if err != nil {
			return rootRun{}, err
		}
		inv.Continue = c
		return rootRun{inv: inv, node: node, rec: rec, started: now}, nil
	})
}

// continuation reads the waiting tree of root id (its claim held) and
// makes the root's Continuation, having closed what does not wait.
func (p *Pool) continuation(ctx context.Context, id string) (*spawn.Continuation, spawn.Node, error) {
	w, err := session.FindWaiting(ctx, p.store, id)
	if err != nil {
		return nil, nil, err
	}
	if w == nil {
		return nil, nil, fmt.Errorf("continue %s: %w", id, ErrNotWaiting)
	}
	c, err := p.continuationOf(ctx, w)
	if err != nil {
		// It cannot go on: closed as a run whose process stopped, as the
		// store's recovery would have.
		if cerr := session.CloseInterrupted(ctx, p.store, id); cerr != nil {
			err = errors.Join(err, fmt.Errorf("close it as interrupted: %w", cerr))
		}
		return nil, nil, fmt.Errorf("continue %s: %w", id, err)
	}
	if err := w.CloseRest(ctx, p.store); err != nil {
		return nil, nil, fmt.Errorf("continue %s: %w", id, err)
	}
	return c, p.nodes[w.Session.AgentName], nil
}

// continuationOf makes the Continuation of the waiting session w and of
// its waiting children.
func (p *Pool) continuationOf(ctx context.Context, w *session.Waiting) (*spawn.Continuation, error) {
	name := w.Session.AgentName
	cn, ok := p.nodes[name].(spawn.Continuer)
	if !ok {
		return nil, fmt.Errorf("session %s runs %q, which the pool has not as an agent or team that can go on from where it stopped", w.Session.ID, name)
	}
	msgs, err := p.store.Messages(ctx, w.Session.ID)
	if err != nil {
		return nil, err
	}
	c := &spawn.Continuation{Waiting: w, History: storedConversation(w.Session, msgs)}
	for _, kw := range w.Children {
		kc, err := p.continuationOf(ctx, kw)
		if err != nil {
			return nil, err
		}
		node, _ := p.rt.Lookup(kw.Session.AgentName)
		if c.Children == nil {
			c.Children = map[string]*spawn.ChildContinuation{}
		}
		c.Children[kw.Session.ID] = &spawn.ChildContinuation{Node: node, Continue: kc}
	}
	if err := cn.CanContinue(c); err != nil {
		return nil, fmt.Errorf("session %s: %w", w.Session.ID, err)
	}
	return c, nil
}

// storedConversation is a stored conversation as a continued run goes on
// with it: as session.History makes it, but for a last model turn whose
// calls are open, which stays as it is (the run gives its calls their
// results). A compacted session goes on from its compacted view
// (session.CompactedHistory).
func storedConversation(s session.Session, msgs []session.Message) []model.Message {
	n := len(msgs)
	if n > 0 && msgs[n-1].Role == model.RoleAssistant && len(msgs[n-1].ToolCalls()) > 0 {
		return append(session.CompactedHistory(s, msgs[:n-1]), msgs[n-1].Message)
	}
	return session.CompactedHistory(s, msgs)
}

// relayStored hands rec the stored events of the tree of root id from
// the start of its run runID on, without storing them again: the
// processor's watchers and the caller's sink then know the tree the run
// goes on with.
func (p *Pool) relayStored(ctx context.Context, rec *record.Recorder, id, runID string) error {
	evs, err := session.ReplayTree(ctx, p.store, id)
	if err != nil {
		return fmt.Errorf("continue %s: read its run: %w", id, err)
	}
	from := 0
	for i, r := range evs {
		if s, ok := r.Event.(event.RunStarted); ok && r.Record.SessionID == id && s.RunID == runID {
			from = i
		}
	}
	for _, r := range evs[from:] {
		rec.Relay(r.Event)
	}
	return nil
}
