// Root sessions and their session/start and session/end points, including
// sessions that a front end keeps open across runs.

package hook

import (
	"context"
	"sync"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/spawn"
)

// A protocol server such as ACP keeps a session open across prompts: each
// prompt is one root run of the pool, but for the session's hooks (and for
// Claude Code hooks, whose SessionStart and SessionEnd fire once per
// session) the session starts once and ends once. The server asks for
// every prompt's run to be kept (pool.RunRequest.KeepSession, which the
// pool passes to SessionStart and SessionEnd as kept) and tells the
// registry when the session closes with EndSession.

// keptSessions are the sessions kept open, by id. The zero value is ready.
type keptSessions struct {
	mu sync.Mutex
	m  map[string]*keptSession
}

// keptSession is a session kept open, from its first run's start to its
// end.
type keptSession struct {
	sess session.Session
	// inv is the invocation of the session's latest run: session/end fires
	// with it in its context (so that what its listeners record goes to the
	// session's log), also after that run ended.
	inv     *spawn.Invocation
	reason  event.StopReason // the latest run's stop reason
	running bool
	closing string // the cause EndSession gave while a run was in progress
}

// SessionStart fires session/start for a root session (the pool calls it).
// A run of a session its caller keeps open across runs (kept) and ends
// with EndSession fires it for the first run of the session only (source
// startup when the session has no history yet, resume when it has).
func (r *Registry) SessionStart(ctx context.Context, s session.Session, source string, kept bool) {
	inv := spawn.InvocationFrom(ctx)
	if kept {
		r.kept.mu.Lock()
		k := r.kept.m[s.ID]
		first := k == nil
		if first {
			if r.kept.m == nil {
				r.kept.m = map[string]*keptSession{}
			}
			k = &keptSession{}
			r.kept.m[s.ID] = k
		}
		k.sess, k.inv, k.running = s, inv, true
		r.kept.mu.Unlock()
		if !first {
			return
		}
		source = SourceStartup
		if inv != nil && len(inv.History) > 0 {
			source = SourceResume
		}
	}
	r.OnSessionStart.Fire(ctx, SessionStart{SessionID: s.ID, Agent: s.AgentName, Source: source, Model: modelOf(inv, s.AgentName)})
}

// SessionEnd fires session/end for a root session (the pool calls it). For a
// run of a kept session (kept, as SessionStart) it only notes how the run
// ended, unless the session was closed while the run was in progress: then
// the session ends now.
func (r *Registry) SessionEnd(ctx context.Context, s session.Session, reason event.StopReason, kept bool) {
	if !kept {
		r.OnSessionEnd.Fire(ctx, SessionEnd{SessionID: s.ID, Agent: s.AgentName, Reason: reason, Cause: CauseRunEnded})
		return
	}
	r.kept.mu.Lock()
	k := r.kept.m[s.ID]
	if k == nil {
		r.kept.mu.Unlock()
		return
	}
	k.sess, k.reason, k.running = s, reason, false
	if inv := spawn.InvocationFrom(ctx); inv != nil {
		k.inv = inv
	}
	cause := k.closing
	if cause != "" {
		delete(r.kept.m, s.ID)
	}
	r.kept.mu.Unlock()
	if cause != "" {
		r.OnSessionEnd.Fire(ctx, SessionEnd{SessionID: s.ID, Agent: s.AgentName, Reason: reason, Cause: cause})
	}
}

// EndSession ends a session kept open across runs (kept): session/end fires
// now, with cause (CauseClosed, CauseDisconnected) and the stop reason of
// its latest run, or, when a run of it is in progress, as soon as that run
// ends. A session that had no run since it was last ended has not started:
// nothing fires.
func (r *Registry) EndSession(ctx context.Context, sessionID, cause string) {
	r.kept.mu.Lock()
	k := r.kept.m[sessionID]
	if k == nil {
		r.kept.mu.Unlock()
		return
	}
	if k.running {
		k.closing = cause
		r.kept.mu.Unlock()
		return
	}
	delete(r.kept.m, sessionID)
	r.kept.mu.Unlock()
	if k.inv != nil {
		ctx = spawn.WithInvocation(ctx, k.inv)
	}
	r.OnSessionEnd.Fire(ctx, SessionEnd{SessionID: sessionID, Agent: k.sess.AgentName, Reason: k.reason, Cause: cause})
}

// modelOf is the model id of the node a root session runs ("" for a team
// or when it cannot be found).
func modelOf(inv *spawn.Invocation, name string) string {
	if inv == nil || inv.Runtime == nil {
		return ""
	}
	if n, ok := inv.Runtime.Lookup(name); ok {
		return n.ModelID()
	}
	return ""
}
