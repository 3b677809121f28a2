package processor

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/session"
)

// leanRun is a root run recorded without a projection: only what the
// store needs (see the package documentation). It belongs to the run's
// stream, whose events the caller serializes: only its registration (and
// the first event, which decides that the run is lean) takes
// Processor.mu.
type leanRun struct {
	one [1]event.Event // backs the one-event store appends
	// gen counts the releases of this value (it is reused through
	// Processor.free): a Stream that kept it checks that it is still the
	// same run's.
	gen atomic.Uint64
	// open lists the children that the run started, or created through
	// the reactive fallback, and that have not ended, each with its
	// parent: a child still open when its parent ends is ended (aborted)
	// in the store, as a projected run does.
	open []leanKid
}

type leanKid struct{ id, parent string }

// Released leanRuns are kept for reuse, within bounds.
const (
	maxFreeLean = 64
	maxLeanKids = 64 // capacity of open kept on reuse
)

// record does the store work of one event of the lean root run owner; lr
// is nil on the run's first event. locked says whether the caller holds
// p.mu. It returns the run's state while the run goes on, nil once this
// event ended it. Steady state (the child exists, the event is no spawn
// start or end): one store append, no allocation, no lock of the
// processor's.
func (p *Processor) record(ctx context.Context, owner string, lr *leanRun, e event.Event, locked bool) *leanRun {
	sid, inner := event.Unwrap(owner, e)
	if inner == nil {
		p.log.Warn("processor: subagent event wraps nothing", "owner", owner, "child", sid)
		return lr
	}
	if sid == "" {
		p.log.Warn("processor: event without a session", "kind", e.Kind())
		return lr
	}
	if lr == nil {
		lr = p.startLean(ctx, owner)
	}
	st := p.store
	if st == nil {
		if sid == owner && ends(inner) {
			p.release(owner, lr, locked)
			return nil
		}
		return lr
	}
	err := lr.appendOne(ctx, st, sid, inner)
	if errors.Is(err, session.ErrNotFound) && sid != owner {
		if w, ok := e.(event.Subagent); ok {
			// A child whose spawn_session_start never came and that nobody
			// created in the store.
			p.log.Warn("processor: event of a child without spawn_session_start; creating it (reactive fallback)",
				"owner", owner, "child", sid, "kind", inner.Kind())
			p.leanFallback(ctx, owner, lr, w)
			err = lr.appendOne(ctx, st, sid, inner)
		}
	}
	if err != nil {
		p.log.Warn("processor: store event", "session", sid, "kind", inner.Kind(), "err", err)
	}
	switch ev := inner.(type) {
	case event.SpawnSessionStart:
		p.leanStart(ctx, lr, sid, ev)
	case event.SpawnSessionEnd:
		p.leanEnd(ctx, lr, sid, ev)
	case event.StreamComplete, event.RunError:
		if sid == owner {
			// The root run ended: its children still open end too.
			for len(lr.open) > 0 {
				k := lr.open[len(lr.open)-1]
				lr.open = lr.open[:len(lr.open)-1]
				p.storeEnd(ctx, k.id, session.StatusAborted, finishInfo{stop: event.StopAborted, err: errParentEnded}, true)
			}
			p.release(owner, lr, locked)
			return nil
		}
	}
	return lr
}

// release forgets the ended lean run of owner, taking p.mu unless the
// caller holds it.
func (p *Processor) release(owner string, lr *leanRun, locked bool) {
	if !locked {
		p.mu.Lock()
		defer p.mu.Unlock()
	}
	p.dropLean(owner, lr)
}

// ends reports whether e ends the run of the session that produced it.
func ends(e event.Event) bool {
	switch e.(type) {
	case event.StreamComplete, event.RunError:
		return true
	}
	return false
}

func (lr *leanRun) appendOne(ctx context.Context, st session.Store, sid string, e event.Event) error {
	lr.one[0] = e
	err := st.AppendEvents(ctx, sid, lr.one[:]...)
	lr.one[0] = nil
	return err
}

// startLean registers the lean run of owner, creating the root session in
// the store when it is not there (the pool always creates it first: one
// read per run).
func (p *Processor) startLean(ctx context.Context, owner string) *leanRun {
	var lr *leanRun
	if n := len(p.free); n > 0 {
		lr = p.free[n-1]
		p.free[n-1] = nil
		p.free = p.free[:n-1]
	} else {
		lr = &leanRun{}
	}
	p.lean[owner] = lr
	st := p.store
	if st == nil {
		return lr
	}
	_, err := st.GetSession(ctx, owner)
	if err == nil {
		return lr
	}
	if !errors.Is(err, session.ErrNotFound) {
		p.log.Warn("processor: load session", "session", owner, "err", err)
	}
	now := time.Now()
	rec := session.Session{ID: owner, Status: session.StatusRunning, SourceType: event.SourceAgent, CreatedAt: now, UpdatedAt: now}
	if err := st.CreateSession(ctx, rec); err != nil && !errors.Is(err, session.ErrExists) {
		p.log.Warn("processor: create session", "session", owner, "err", err)
	}
	return lr
}

// dropLean forgets the lean run of owner.
func (p *Processor) dropLean(owner string, lr *leanRun) {
	delete(p.lean, owner)
	lr.gen.Add(1) // a Stream that kept lr stops using it
	if len(p.free) >= maxFreeLean || cap(lr.open) > maxLeanKids {
		return
	}
	clear(lr.open[:cap(lr.open)])
	lr.open = lr.open[:0]
	p.free = append(p.free, lr)
}

func (lr *leanRun) add(id, parent string) {
	for _, k := range lr.open {
		if k.id == id {
			return
		}
	}
	lr.open = append(lr.open, leanKid{id: id, parent: parent})
}

func (lr *leanRun) remove(id string) {
	for i, k := range lr.open {
		if k.id == id {
			copy(lr.open[i:], lr.open[i+1:])
			lr.open[len(lr.open)-1] = leanKid{}
			lr.open = lr.open[:len(lr.open)-1]
			return
		}
	}
}

// endKids ends, as aborted, the open children of parent and theirs.
func (p *Processor) endKids(ctx context.Context, lr *leanRun, parent string) {
	for i := len(lr.open) - 1; i >= 0; i-- {
		if i >= len(lr.open) || lr.open[i].parent != parent {
			continue
		}
		k := lr.open[i]
		lr.remove(k.id)
		p.endKids(ctx, lr, k.id)
		p.storeEnd(ctx, k.id, session.StatusAborted, finishInfo{stop: event.StopAborted, err: errParentEnded}, true)
	}
}

// leanStart makes sure the child of a spawn_session_start is in the store
// (spawn.Spawn creates it before the start: one read).
func (p *Processor) leanStart(ctx context.Context, lr *leanRun, parent string, ev event.SpawnSessionStart) {
	if ev.ChildSessionID == "" {
		return
	}
	st := p.store
	if _, err := st.GetSession(ctx, ev.ChildSessionID); err != nil {
		if !errors.Is(err, session.ErrNotFound) {
			p.log.Warn("processor: load session", "session", ev.ChildSessionID, "err", err)
		}
		rec := childRecord(spawnInfo{child: ev.ChildSessionID, sourceName: ev.SourceName, sourceType: ev.SourceType,
			description: ev.Description, depth: ev.Depth}, parent, time.Now())
		if err := st.CreateSession(ctx, rec); err != nil && !errors.Is(err, session.ErrExists) {
			p.log.Warn("processor: create session", "session", ev.ChildSessionID, "err", err)
		}
	}
	lr.add(ev.ChildSessionID, parent)
}

// leanEnd completes the store record of the child of a spawn_session_end
// while the store still shows it running (spawn.Spawn writes the final
// record before the end: one read, no write), after ending its open
// children.
func (p *Processor) leanEnd(ctx context.Context, lr *leanRun, parent string, ev event.SpawnSessionEnd) {
	c := ev.ChildSessionID
	if c == "" {
		return
	}
	p.endKids(ctx, lr, c)
	lr.remove(c)
	f := finishInfo{stop: ev.StopReason, err: ev.Error, output: ev.LastAssistantMessage, usage: ev.Usage,
		cost: ev.Cost, durationMS: ev.DurationMS, final: true}
	if f.stop == "" {
		f.stop = event.StopCompleted
		if f.err != "" {
			f.stop = event.StopError
		}
	}
	st := p.store
	cur, err := st.GetSession(ctx, c)
	switch {
	case err == nil:
		if cur.Status != session.StatusRunning {
			return
		}
	case errors.Is(err, session.ErrNotFound):
		p.log.Warn("processor: spawn_session_end of a child without spawn_session_start; creating it (reactive fallback)",
			"parent", parent, "child", c)
		rec := childRecord(spawnInfo{child: c, sourceName: ev.SourceName, sourceType: ev.SourceType, depth: ev.Depth}, parent, time.Now())
		if err := st.CreateSession(ctx, rec); err != nil && !errors.Is(err, session.ErrExists) {
			p.log.Warn("processor: create session", "session", c, "err", err)
			return
		}
	default:
		p.log.Warn("processor: load session", "session", c, "err", err)
		return
	}
	p.storeEnd(ctx, c, session.StatusFromStop(f.stop), f, false)
}

// leanFallback creates in the store the missing sessions on the path of
// the child a wrapped event comes from, as a projected run's reactive
// fallback does.
func (p *Processor) leanFallback(ctx context.Context, owner string, lr *leanRun, w event.Subagent) {
	st := p.store
	sid := w.ChildSessionID
	parent, err := st.GetSession(ctx, owner)
	if err != nil {
		parent = session.Session{ID: owner}
	}
	path := w.Path
	if len(path) == 0 || path[len(path)-1] != sid {
		path = []string{sid}
		if w.ParentSessionID != "" && w.ParentSessionID != owner {
			if r, err := st.GetSession(ctx, w.ParentSessionID); err == nil {
				parent = r
			}
		}
	}
	now := time.Now()
	for _, cid := range path {
		if r, err := st.GetSession(ctx, cid); err == nil {
			lr.add(cid, parent.ID)
			parent = r
			continue
		}
		info := spawnInfo{child: cid, depth: parent.Depth + 1}
		if cid == sid {
			info.sourceName, info.sourceType, info.depth = w.SourceName, w.SourceType, w.Depth
		}
		rec := childRecord(info, parent.ID, now)
		if err := st.CreateSession(ctx, rec); err != nil && !errors.Is(err, session.ErrExists) {
			p.log.Warn("processor: create session", "session", cid, "err", err)
		}
		lr.add(cid, parent.ID)
		parent = rec
	}
}
