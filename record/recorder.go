package record

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/session"
)

// Recorder records one root run (Processor.Open): it appends each event of
// the run's stream to the event log of the session that produced it, and
// to the run's log (log.go), from which the run's watchers and the next
// sink each get it, in that order, without the run's lock. It is an
// event.Sink, safe for concurrent use, and a spawn.Recorder (Record).
//
// Besides the appends it keeps the store rules of the package
// documentation, for producers that do not write the store themselves.
type Recorder struct {
	p     *Processor
	ctx   context.Context
	owner string

	// mu is the run's lock: the store appends and the store rules, the
	// log's appends and ring. No consumer is called under it.
	mu      sync.Mutex
	started bool           // the run's first event was recorded
	one     [1]event.Event // backs the one-event appends
	// logs are the event logs of the run's sessions found so far, when
	// the store hands them (session.EventLogs): an append then finds its
	// session without the store's index (append).
	logs []sessionLog
	// open lists the children the run started, or created through the
	// reactive fallback, and that have not ended, each with its parent: a
	// child still open when its parent ends is ended (aborted) too.
	open []openKid

	// The run's log (log.go). cons are its consumers (the next sink from
	// Open, the watchers from the run's first event), under mu; consPub
	// is the same list for the deliveries, which read it without mu.
	cons    []*consumer
	consPub atomic.Pointer[[]*consumer]
	ring    []entry       // under mu; a power of two long
	kept    uint64        // entries before it are cleared (forget); under mu
	end     atomic.Uint64 // entries appended; written under mu
	cond    sync.Cond     // on mu: room in the ring, a cursor moved
	waiters atomic.Int32  // goroutines in cond.Wait or about to be
}

type openKid struct{ id, parent string }

// sessionLog is the event log of one session of the run (Recorder.logs).
type sessionLog struct {
	id  string
	log session.EventLog
}

// maxLogs bounds the event logs a run keeps: past it, the oldest is
// forgotten (a run with more sessions than that at once, which are rare,
// finds some again).
const maxLogs = 16

// Emit records e and passes it on: it appends e to the store and to the
// run's log under the run's lock, then hands the log to the consumers
// whose delivery no other goroutine has under way (see Sync).
func (r *Recorder) Emit(e event.Event) {
	r.mu.Lock()
	r.reserve()
	watch := r.record(e)
	r.push(entry{e: e, watch: watch})
	cs, claimed := r.claim()
	r.mu.Unlock()
	r.deliverClaimed(cs, claimed)
}

// Relay hands e, an event of the run that its producer has stored
// already (a run on a durable engine, whose workers write the logs), to
// the run's watchers and to the next sink, in the order of the run's
// other events, without storing it: none of the store rules apply.
func (r *Recorder) Relay(e event.Event) {
	if e == nil {
		return
	}
	r.mu.Lock()
	r.reserve()
	watch := false
	if sid, inner := event.Unwrap(r.owner, e); sid != "" && inner != nil {
		if !r.started {
			r.start()
		}
		watch = true
	}
	r.push(entry{e: e, watch: watch})
	cs, claimed := r.claim()
	r.mu.Unlock()
	r.deliverClaimed(cs, claimed)
}

// Record appends e, an event of session sessionID, to that session's log in
// the run's order, and passes it on to nobody: for events outside the
// run's span (spawn.Invocation.Record).
func (r *Recorder) Record(sessionID string, e event.Event) {
	st := r.p.store
	if st == nil || e == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.append(st, sessionID, e); err != nil && !errors.Is(err, session.ErrEarlierWriteLost) {
		r.p.log.Warn("record: store event", "session", sessionID, "kind", e.Kind(), "err", err)
	}
}

// record does the store work of e and reports whether e is an event of the
// run (one that names its session). Steady state (the session exists, the
// event is no spawn start or end): one append, no allocation.
func (r *Recorder) record(e event.Event) bool {
	if e == nil {
		return false
	}
	sid, inner := event.Unwrap(r.owner, e)
	if inner == nil {
		r.p.log.Warn("record: subagent event wraps nothing", "owner", r.owner, "child", sid)
		return false
	}
	if sid == "" {
		r.p.log.Warn("record: event without a session", "kind", e.Kind())
		return false
	}
	if !r.started {
		r.start()
	}
	st := r.p.store
	if st == nil {
		return true
	}
	err := r.append(st, sid, inner)
	if errors.Is(err, session.ErrNotFound) && sid != r.owner {
		if w, ok := e.(event.Subagent); ok {
			// A child whose spawn_session_start never came and that
			// nobody created in the store.
			r.p.log.Warn("record: event of a child without spawn_session_start; creating it (reactive fallback)",
				"owner", r.owner, "child", sid, "kind", inner.Kind())
			r.fallback(w)
			err = r.append(st, sid, inner)
		}
	}
	if err != nil && !errors.Is(err, session.ErrEarlierWriteLost) {
		// The refusals after a run's first lost write are counted in
		// its account (session.TrackWrites), not logged one by one.
		r.p.log.Warn("record: store event", "session", sid, "kind", inner.Kind(), "err", err)
	}
	switch ev := inner.(type) {
	case event.SpawnSessionStart:
		r.childStarted(sid, ev)
	case event.SpawnSessionEnd:
		r.childEnded(sid, ev)
	case event.StreamComplete, event.RunError:
		if sid == r.owner {
			// The root's run ended: its children still open end too.
			for len(r.open) > 0 {
				k := r.open[len(r.open)-1]
				r.open = r.open[:len(r.open)-1]
				r.storeEnd(k.id, session.ParentEnded(), true)
			}
		}
	}
	return true
}

func (r *Recorder) append(st session.Store, sid string, e event.Event) error {
	r.one[0] = e
	defer func() { r.one[0] = nil }()
	if l := r.eventLog(st, sid); l != nil {
		err := l.AppendEvents(r.one[:]...)
		if !errors.Is(err, session.ErrNotFound) {
			return err
		}
		// The session left the store since its log was found (and may
		// be there again, made anew: the store says). Nothing was
		// written nor counted.
		r.forgetLog(sid)
	}
	return st.AppendEvents(r.ctx, sid, r.one[:]...)
}

// eventLog returns the event log of session sid when the store hands
// logs (session.EventLogs), found once per run; nil otherwise. Under r.mu.
func (r *Recorder) eventLog(st session.Store, sid string) session.EventLog {
	for i := range r.logs {
		if r.logs[i].id == sid {
			return r.logs[i].log
		}
	}
	ls, ok := st.(session.EventLogs)
	if !ok {
		return nil
	}
	l, err := ls.EventLog(r.ctx, sid)
	if err != nil {
		return nil // the store's AppendEvents says why
	}
	if len(r.logs) == maxLogs {
		r.logs = append(r.logs[:0], r.logs[1:]...)
	}
	r.logs = append(r.logs, sessionLog{id: sid, log: l})
	return l
}

// forgetLog forgets the event log of session sid. Under r.mu.
func (r *Recorder) forgetLog(sid string) {
	r.logs = slices.DeleteFunc(r.logs, func(l sessionLog) bool { return l.id == sid })
}

// start fixes the run's watchers (consumers of its log from this event
// on) and creates the root session in the store
// when it is not there (the pool always creates it first: one read per
// run).
func (r *Recorder) start() {
	r.started = true
	if ws := r.p.current.Load(); ws != nil {
		for _, w := range *ws {
			r.addConsumer(&consumer{w: w})
		}
	}
	st := r.p.store
	if st == nil {
		return
	}
	_, err := st.GetSession(r.ctx, r.owner)
	if err == nil {
		return
	}
	if !errors.Is(err, session.ErrNotFound) {
		r.p.log.Warn("record: load session", "session", r.owner, "err", err)
	}
	now := time.Now()
	r.create(session.Session{ID: r.owner, Status: session.StatusRunning, SourceType: event.SourceAgent, CreatedAt: now, UpdatedAt: now})
}

func (r *Recorder) create(rec session.Session) {
	if err := r.p.store.CreateSession(r.ctx, rec); err != nil && !errors.Is(err, session.ErrExists) {
		r.p.log.Warn("record: create session", "session", rec.ID, "err", err)
	}
}

func (r *Recorder) opened(id, parent string) {
	for _, k := range r.open {
		if k.id == id {
			return
		}
	}
	r.open = append(r.open, openKid{id: id, parent: parent})
}

func (r *Recorder) closed(id string) {
	for i, k := range r.open {
		if k.id == id {
			r.open = append(r.open[:i], r.open[i+1:]...)
			return
		}
	}
}

// endKids ends, as aborted, the open children of parent and theirs.
func (r *Recorder) endKids(parent string) {
	for i := len(r.open) - 1; i >= 0; i-- {
		if i >= len(r.open) || r.open[i].parent != parent {
			continue
		}
		k := r.open[i]
		r.closed(k.id)
		r.endKids(k.id)
		r.storeEnd(k.id, session.ParentEnded(), true)
	}
}

// childStarted makes sure the child of a spawn_session_start is in the
// store (spawn.Spawn creates it before the start: one read).
func (r *Recorder) childStarted(parent string, ev event.SpawnSessionStart) {
	if ev.ChildSessionID == "" {
		return
	}
	if ok, err := r.exists(ev.ChildSessionID); !ok {
		if err != nil {
			r.p.log.Warn("record: load session", "session", ev.ChildSessionID, "err", err)
		}
		r.create(session.ChildRecord(event.SpawnSessionStart{ChildSessionID: ev.ChildSessionID, ParentSessionID: parent,
			SourceName: ev.SourceName, SourceType: ev.SourceType, Description: ev.Description, Depth: ev.Depth}, time.Now()))
	}
	r.opened(ev.ChildSessionID, parent)
}

// exists reports whether session id is in the store: through
// session.Exister when the store has it (no record read), else GetSession.
// A store error is returned with false.
func (r *Recorder) exists(id string) (bool, error) {
	if ex := exister(r.p.store); ex != nil {
		return ex.Exists(r.ctx, id)
	}
	_, err := r.p.store.GetSession(r.ctx, id)
	if errors.Is(err, session.ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

// exister is st as a session.Exister, looking through wrappers that say
// what they wrap (Unwrap() session.Store); nil when none is one.
func exister(st session.Store) session.Exister {
	for st != nil {
		if ex, ok := st.(session.Exister); ok {
			return ex
		}
		u, ok := st.(interface{ Unwrap() session.Store })
		if !ok {
			return nil
		}
		st = u.Unwrap()
	}
	return nil
}

// childEnded completes the store record of the child of a
// spawn_session_end while the store still shows it running (spawn.Spawn
// writes the final record before the end: one read, no write), after
// ending its open children.
func (r *Recorder) childEnded(parent string, ev event.SpawnSessionEnd) {
	c := ev.ChildSessionID
	if c == "" {
		return
	}
	r.endKids(c)
	r.closed(c)
	cur, err := r.p.store.GetSession(r.ctx, c)
	switch {
	case err == nil:
		if cur.Status != session.StatusRunning {
			return
		}
	case errors.Is(err, session.ErrNotFound):
		r.p.log.Warn("record: spawn_session_end of a child without spawn_session_start; creating it (reactive fallback)",
			"parent", parent, "child", c)
		rec := session.ChildRecord(event.SpawnSessionStart{ChildSessionID: c, ParentSessionID: parent,
			SourceName: ev.SourceName, SourceType: ev.SourceType, Depth: ev.Depth}, time.Now())
		if err := r.p.store.CreateSession(r.ctx, rec); err != nil && !errors.Is(err, session.ErrExists) {
			r.p.log.Warn("record: create session", "session", c, "err", err)
			return
		}
	default:
		r.p.log.Warn("record: load session", "session", c, "err", err)
		return
	}
	r.storeEnd(c, session.EndingOf(ev), false)
}

// fallback creates in the store the missing sessions on the path of the
// child a wrapped event comes from, from what the wrapper carries.
func (r *Recorder) fallback(w event.Subagent) {
	st := r.p.store
	sid := w.ChildSessionID
	parent, err := st.GetSession(r.ctx, r.owner)
	if err != nil {
		parent = session.Session{ID: r.owner}
	}
	path := w.Path
	if len(path) == 0 || path[len(path)-1] != sid {
		path = []string{sid}
		if w.ParentSessionID != "" && w.ParentSessionID != r.owner {
			if rec, err := st.GetSession(r.ctx, w.ParentSessionID); err == nil {
				parent = rec
			}
		}
	}
	now := time.Now()
	for _, cid := range path {
		if rec, err := st.GetSession(r.ctx, cid); err == nil {
			r.opened(cid, parent.ID)
			parent = rec
			continue
		}
		start := event.SpawnSessionStart{ChildSessionID: cid, ParentSessionID: parent.ID, Depth: parent.Depth + 1}
		if cid == sid {
			start.SourceName, start.SourceType, start.Depth = w.SourceName, w.SourceType, w.Depth
		}
		rec := session.ChildRecord(start, now)
		r.create(rec)
		r.opened(cid, parent.ID)
		parent = rec
	}
}

// storeEnd writes the final status of child id into the store while the
// store shows it running; check reads the record first, so that a child
// already completed costs no write.
func (r *Recorder) storeEnd(id string, f session.Ending, check bool) {
	st := r.p.store
	if check {
		cur, err := st.GetSession(r.ctx, id)
		if err != nil || cur.Status != session.StatusRunning {
			return
		}
	}
	err := st.UpdateSession(r.ctx, id, func(rec *session.Session) {
		if rec.Status != session.StatusRunning && rec.Status != "" {
			return
		}
		rec.Status, rec.StopReason = session.StatusFromStop(f.Stop), f.Stop
		if f.Final {
			if f.Usage != nil && rec.TotalUsage.IsZero() {
				rec.TotalUsage = *f.Usage
			}
			if rec.TotalCost == 0 {
				rec.TotalCost = f.Cost
			}
			if rec.DurationMS == 0 {
				rec.DurationMS = f.DurationMS
			}
		}
		if f.Err != "" {
			if rec.Metadata == nil {
				rec.Metadata = map[string]any{}
			}
			if _, set := rec.Metadata["error"]; !set {
				rec.Metadata["error"] = f.Err
			}
		}
	})
	if err != nil {
		r.p.log.Warn("record: store session end", "session", id, "err", err)
	}
}
