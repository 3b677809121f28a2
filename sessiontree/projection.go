package sessiontree

import (
	"context"
	"encoding/json"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/record"
	"github.com/agentpool/agentpool/session"
)

// Projection is the session tree of the runs it is given (see the package
// documentation): a Processor's Watcher, or fed by hand through Apply. It
// reads its store (the records of the sessions it starts projecting, and
// Session and Plan once a run was released), and never writes it. Use
// NewProjection.
type Projection struct {
	store session.Store
	log   *slog.Logger

	// roots holds the projection of each root run in progress, by owner
	// (*rootProj). An event takes its run's own lock only: runs of
	// different roots never wait for each other (issue 32: no
	// process-wide lock on the hot path). sync.Map, because an owner's
	// entry is written once and read for each of the run's events.
	roots sync.Map
	// index finds the root projection that holds a session (session id
	// -> *rootProj), for Session, Plan and the duplicate guard of
	// spawn_session_start across streams.
	index sync.Map

	// done holds the ids of children whose run has finished and whose
	// projection was released: the duplicate guard, for the last
	// maxDone of them (doneRing keeps their order, doneNext is the
	// oldest's slot), so that a long-running server does not keep an id
	// per child forever. An event reads it only when its session is not
	// in its run's projection (a new or released session), so doneMu is
	// off the path of the run's steady state.
	doneMu   sync.Mutex
	done     map[string]struct{}
	doneRing []string
	doneNext int

	// subs is the list of subscribers, read once per event without a
	// lock; Subscribe and unsubscribe replace it under subMu (copy on
	// write). Nil or empty: nobody subscribes, and no Changes are made.
	subMu sync.Mutex
	subs  atomic.Pointer[[]*subscription]
}

// subscription is one Subscribe: its own allocation, so that unsubscribe
// finds it by identity.
type subscription struct {
	fn func(owner string, cs []Change)
	// run, when set (SubscribeRuns), makes the subscriber's fn of a run.
	run func(owner string) func(owner string, cs []Change)
}

// rootProj is the projection of one root run: its sessions, under its own
// lock.
type rootProj struct {
	mu       sync.Mutex
	sessions map[string]*sess // the run's sessions, root included
	ids      []string         // the ids of sessions, in creation order
	released bool             // the run ended; a later event starts a new rootProj
	scratch  applier          // reused by every event of the run, under mu
}

// NewProjection returns a projection that reads store (nil: none) and logs
// to log (nil: nowhere).
func NewProjection(store session.Store, log *slog.Logger) *Projection {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Projection{store: store, log: log, done: map[string]struct{}{}}
}

// Subscribe calls fn with the Changes of every later event, after the
// projection has released its lock. fn gets its own copy of the Changes
// and must not feed the projection. The returned function unsubscribes:
// no event projected after it returned calls fn (a call under way may
// still end after it).
func (p *Projection) Subscribe(fn func(owner string, cs []Change)) (unsubscribe func()) {
	return p.subscribe(&subscription{fn: fn})
}

// SubscribeRuns is Subscribe for a subscriber that keeps state per run
// (the state of the run's sessions, found once): run returns the function
// that gets a run's Changes. For a run the projection watches as a
// Processor's record.RunWatcher, run is called once, before the run's
// first Changes go out, and its function gets every later Changes of the
// run, one call at a time; for the events given by Apply or by Observe,
// run is called for each event that changed something. The function may
// keep the Changes but not the slice cs, which the projection reuses
// after it returns.
func (p *Projection) SubscribeRuns(run func(owner string) func(owner string, cs []Change)) (unsubscribe func()) {
	return p.subscribe(&subscription{run: run})
}

func (p *Projection) subscribe(sub *subscription) (unsubscribe func()) {
	p.subMu.Lock()
	defer p.subMu.Unlock()
	var list []*subscription
	if cur := p.subs.Load(); cur != nil {
		list = append(list, *cur...)
	}
	list = append(list, sub)
	p.subs.Store(&list)
	return func() {
		p.subMu.Lock()
		defer p.subMu.Unlock()
		list := slices.DeleteFunc(slices.Clone(*p.subs.Load()), func(s *subscription) bool { return s == sub })
		p.subs.Store(&list)
	}
}

// Session returns the record of a session: the live projection while its
// root run is projected, else the store's record.
func (p *Projection) Session(id string) (session.Session, bool) {
	var rec session.Session
	ok := p.live(id, func(s *sess) { rec = s.info() })
	if ok {
		return rec, true
	}
	if p.store == nil {
		return session.Session{}, false
	}
	rec, err := p.store.GetSession(context.Background(), id)
	return rec, err == nil
}

// Apply projects one event of the stream owned by the root session owner
// and returns what changed. Events of one stream must come in stream
// order.
func (p *Projection) Apply(ctx context.Context, owner string, e event.Event) []Change {
	if e == nil {
		return nil
	}
	return p.project(ctx, owner, e, true, nil)
}

// Observe projects one event of a run a Processor records (Watcher). Its
// Changes are made only while someone subscribes.
func (p *Projection) Observe(ctx context.Context, owner string, e event.Event) {
	if e != nil {
		p.project(ctx, owner, e, false, nil)
	}
}

// WatchRun returns the projection's watcher of one run (record.RunWatcher):
// it keeps the run's projection and its subscribers' functions for the
// run (SubscribeRuns), so that an event of the run does not look them up.
func (p *Projection) WatchRun(owner string) record.Watcher {
	return &runWatch{p: p}
}

// runWatch is the projection's watcher of one run: Observe with the run's
// projection and subscribers kept from one event to the next (a recorder
// hands a watcher one event of a run at a time).
type runWatch struct {
	p *Projection
	r *rootProj // the run's projection at the last event; nil before
	// fns are the functions of the subscribers of the list subs for the
	// run (runFns).
	subs *[]*subscription
	fns  []func(owner string, cs []Change)
	out  []Change // the Changes handed to a last subscriber that is per run
}

func (w *runWatch) Observe(ctx context.Context, owner string, e event.Event) {
	if e != nil {
		w.p.project(ctx, owner, e, false, w)
	}
}

// runFns returns the functions of the subscribers of list for the run,
// made again when the list changed since the last call (a per-run
// subscriber that stayed keeps its function).
func (w *runWatch) runFns(list *[]*subscription, owner string) []func(string, []Change) {
	if w.subs == list {
		return w.fns
	}
	var old []*subscription
	if w.subs != nil {
		old = *w.subs
	}
	fns := make([]func(string, []Change), len(*list))
	for i, sub := range *list {
		switch j := slices.Index(old, sub); {
		case sub.run == nil:
			fns[i] = sub.fn
		case j >= 0:
			fns[i] = w.fns[j]
		default:
			fns[i] = sub.run(owner)
		}
	}
	w.subs, w.fns = list, fns
	return fns
}

// live calls fn, under the lock of its run, with the projection of
// session id when its root run is projected, and reports whether it did.
func (p *Projection) live(id string, fn func(*sess)) bool {
	v, ok := p.index.Load(id)
	if !ok {
		return false
	}
	r := v.(*rootProj)
	r.mu.Lock()
	defer r.mu.Unlock()
	s, ok := r.sessions[id]
	if !ok || r.released {
		return false
	}
	fn(s)
	return true
}

// run returns the projection of owner's run, locked.
func (p *Projection) run(owner string) *rootProj {
	for {
		v, ok := p.roots.Load(owner)
		if !ok {
			v, _ = p.roots.LoadOrStore(owner, &rootProj{sessions: map[string]*sess{}})
		}
		r := v.(*rootProj)
		r.mu.Lock()
		if !r.released {
			return r
		}
		// Released since it was loaded (it is out of roots already).
		r.mu.Unlock()
	}
}

// locked returns the projection of owner's run, locked: *kept when it is
// still the run's (not released), else the one run finds, kept in *kept
// for the next event. kept nil: none is kept.
func (p *Projection) locked(owner string, kept **rootProj) *rootProj {
	if kept == nil {
		return p.run(owner)
	}
	if r := *kept; r != nil {
		r.mu.Lock()
		// A projection leaves roots only released (drop, under its
		// lock): one that is not released is still the run's.
		if !r.released {
			return r
		}
		r.mu.Unlock()
	}
	r := p.run(owner)
	*kept = r
	return r
}

// project takes one event under the lock of its run; ret says that the
// caller wants the Changes back; w (nil: none) is the run's watcher,
// which keeps the run's projection and subscribers between events.
func (p *Projection) project(ctx context.Context, owner string, e event.Event, ret bool, w *runWatch) []Change {
	var subs []*subscription
	l := p.subs.Load()
	if l != nil {
		subs = *l
	}
	subscribed := len(subs) > 0
	var kept **rootProj
	if w != nil {
		kept = &w.r
	}
	r := p.locked(owner, kept)
	// One applier per run is reused under r.mu: no allocation per event.
	a := &r.scratch
	*a = applier{p: p, r: r, ctx: ctx, owner: owner, want: ret || subscribed, out: a.out[:0]}
	a.apply(e)
	if len(r.sessions) == 0 && !r.released {
		// The event made nothing (one of a released child): keep no
		// entry for the run.
		a.drop()
	}
	var out []Change
	reused := false
	switch {
	case len(a.out) == 0:
	case w != nil && !ret && subs[len(subs)-1].run != nil:
		// The last subscriber is a run's function, which does not keep
		// the slice: the run's own buffer, no allocation per event.
		w.out = append(w.out[:0], a.out...)
		out, reused = w.out, true
	default:
		// Changes are snapshots (they share nothing with the projection);
		// this copy is the caller's or, without one, the last
		// subscriber's; the others get deep copies, made before it is
		// handed over.
		out = append([]Change(nil), a.out...)
	}
	clear(a.out)
	a.ctx = nil
	r.mu.Unlock()
	if subscribed && len(out) > 0 {
		var fns []func(string, []Change)
		if w != nil {
			fns = w.runFns(l, owner)
		}
		for i, sub := range subs {
			fn := sub.fn
			switch {
			case fns != nil:
				fn = fns[i]
			case sub.run != nil:
				fn = sub.run(owner)
			}
			if i == len(subs)-1 && !ret {
				fn(owner, out)
				continue
			}
			fn(owner, cloneChanges(out))
		}
	}
	if reused {
		clear(out) // keeps nothing of the event alive
		return nil
	}
	return out
}

// sess is the projection of one session.
type sess struct {
	rec     session.Session
	parent  *sess
	link    *part            // the tool part in the parent that points here
	kids    map[string]*sess // children that have not ended
	tools   map[string]*part // open tool parts by call id
	msg     *message         // the open assistant message
	userMsg string           // the last user message
	model   string           // the model of the current run when it is not its agent's own (run_started)
	ended   bool
	errored bool              // a session error was reported for the current run
	plan    []event.PlanEntry // the latest plan_update the projection saw (report.go)
	planned bool              // plan is known
}

func (s *sess) info() session.Session {
	r := s.rec
	r.Metadata = session.CloneMetadata(r.Metadata)
	return r
}

type message struct {
	info    Message
	byIndex []*part // by event part index (small, dense); see part
	last    int     // highest part index seen, -1 before any
	parts   []*part
}

// part returns the part with event index i.
func (m *message) part(i int) (*part, bool) {
	if i < 0 || i >= len(m.byIndex) || m.byIndex[i] == nil {
		return nil, false
	}
	return m.byIndex[i], true
}

// setPart records the part with event index i. Indexes come from one
// model response and are small; a hostile index is bounded.
func (m *message) setPart(i int, pt *part) {
	if i < 0 || i > 1<<16 {
		return
	}
	for len(m.byIndex) <= i {
		m.byIndex = append(m.byIndex, nil)
	}
	m.byIndex[i] = pt
}

// addKid and addTool make the maps on first use: most sessions never
// spawn, many never call a tool.
func (s *sess) addKid(id string, c *sess) {
	if s.kids == nil {
		s.kids = map[string]*sess{}
	}
	s.kids[id] = c
}

func (s *sess) addTool(callID string, pt *part) {
	if s.tools == nil {
		s.tools = map[string]*part{}
	}
	s.tools[callID] = pt
}

type part struct {
	Part
	text strings.Builder
	raw  strings.Builder
}

func (pt *part) snapshot() Part {
	c := pt.Part
	c.Text = pt.text.String()
	c.State.Raw = pt.raw.String()
	c.State.Metadata = maps.Clone(pt.State.Metadata)
	cloneReport(&c.State)
	return c
}

func (pt *part) open() bool {
	return pt.Type == PartTool && (pt.State.Status == ToolPending || pt.State.Status == ToolRunning)
}

// applier carries one event through the projection.
type applier struct {
	p     *Projection
	r     *rootProj // the run's projection, locked
	ctx   context.Context
	owner string
	now   time.Time
	want  bool // build Changes (someone reads them)
	out   []Change
}

func (a *applier) emit(c Change) { a.out = append(a.out, c) }

// clock returns the time of the event being applied, read once and only
// when something needs it (most deltas do not).
func (a *applier) clock() time.Time {
	if a.now.IsZero() {
		a.now = time.Now()
	}
	return a.now
}

// maxDone bounds the duplicate guard: ids of this many ended children are
// kept (about 100 bytes each).
const maxDone = 1 << 16

// markDone adds id to the duplicate guard, forgetting the oldest id when
// the guard is full. Under p.doneMu. (An id taken out of done, a child
// resumed as a root, may stay in the ring; if it ends again, its older
// slot's eviction forgets it early, which only shortens its guard.)
func (p *Projection) markDone(id string) {
	if _, ok := p.done[id]; ok {
		return
	}
	if len(p.doneRing) < maxDone {
		p.doneRing = append(p.doneRing, id)
	} else {
		delete(p.done, p.doneRing[p.doneNext])
		p.doneRing[p.doneNext] = id
		p.doneNext = (p.doneNext + 1) % maxDone
	}
	p.done[id] = struct{}{}
}

// isDone reports whether id is in the duplicate guard.
func (p *Projection) isDone(id string) bool {
	p.doneMu.Lock()
	defer p.doneMu.Unlock()
	_, ok := p.done[id]
	return ok
}

// undo takes id out of the duplicate guard and reports whether it was in.
func (p *Projection) undo(id string) bool {
	p.doneMu.Lock()
	defer p.doneMu.Unlock()
	_, ok := p.done[id]
	delete(p.done, id)
	return ok
}

// release drops the projection of a finished root run and of every
// session under it; ended children stay known to the duplicate guard. A
// later run of the same root (a resumed session) starts from the store.
func (a *applier) release(root *sess) {
	if root.parent != nil || a.owner != root.rec.ID {
		return
	}
	a.p.doneMu.Lock()
	for _, id := range a.r.ids {
		if id != a.owner {
			a.p.markDone(id)
		}
	}
	a.p.doneMu.Unlock()
	a.drop()
}

// drop takes the run's projection out of the Projection; its maps stay
// usable to the end of the event being applied.
func (a *applier) drop() {
	for _, id := range a.r.ids {
		a.p.index.CompareAndDelete(id, a.r)
	}
	a.r.released = true
	a.p.roots.CompareAndDelete(a.owner, a.r)
}

// add records session s of the run under id.
func (a *applier) add(id string, s *sess) {
	a.r.sessions[id] = s
	a.r.ids = append(a.r.ids, id)
	a.p.index.Store(id, a.r)
}

// cloneChanges deep-copies the maps of cs, so that each subscriber has its
// own.
func cloneChanges(cs []Change) []Change {
	out := make([]Change, len(cs))
	for i, c := range cs {
		switch v := c.(type) {
		case SessionCreated:
			v.Info.Metadata = session.CloneMetadata(v.Info.Metadata)
			c = v
		case SessionUpdated:
			v.Info.Metadata = session.CloneMetadata(v.Info.Metadata)
			c = v
		case PartUpdated:
			v.Part.State.Metadata = session.CloneMetadata(v.Part.State.Metadata)
			v.Part.State.Input = append(json.RawMessage(nil), v.Part.State.Input...)
			cloneReport(&v.Part.State)
			c = v
		case PlanUpdated:
			v.Entries = slices.Clone(v.Entries)
			c = v
		}
		out[i] = c
	}
	return out
}
