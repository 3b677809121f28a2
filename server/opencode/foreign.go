package opencode

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/record"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/sessiontree"
)

// Runs of other processes on the server's store (an `agentpool run` on
// the same SQLite file or PostgreSQL database) are followed like the
// server's own: every foreignPollEvery the server lists the running
// roots of the store; a root that runs and is no run of this process is
// followed from its log (its own events, and its descendants' wrapped as
// a run in this process emits them) into a projection of its own, whose
// Changes the event mapper publishes as it does the local runs': the
// sessions appear (session.created, session.status busy), their messages
// stream, and they end (session.idle) on every event stream, and
// GET /session/status lists them while they run.
//
// Bounds: one list of at most foreignRoots roots per poll; each followed
// run costs one read of each of its sessions' logs since the last poll.
// A root whose process died while it ran stays listed as running until
// the store's recovery closes it (docs/web.md).

// foreignPollEvery is how often the store is read for runs of other
// processes; foreignRoots how many of its newest roots are looked at.
var (
	foreignPollEvery = 250 * time.Millisecond
	foreignRoots     = 500
)

// foreignRuns follows the runs of other processes. Its maps are the
// loop's own (no lock) but local, which the processor's watcher writes.
type foreignRuns struct {
	b      *base
	mapper *eventMapper
	proj   *sessiontree.Projection
	// local holds the roots of this process's runs (owner -> time of the
	// last event seen, for pruning): never followed.
	local sync.Map

	stop context.CancelFunc
	done chan struct{}

	runs    map[string]*tail // followed roots
	suspect map[string]bool  // running and not local on the last poll
}

// localRuns is the processor's watcher of the server: it notes each
// local run's root before the projection takes its event.
type localRuns struct {
	next record.Watcher
	f    *foreignRuns
}

func (l localRuns) Observe(ctx context.Context, owner string, e event.Event) {
	l.f.local.Store(owner, time.Now())
	l.next.Observe(ctx, owner, e)
}

func startForeign(b *base, m *eventMapper) *foreignRuns {
	ctx, cancel := context.WithCancel(context.Background())
	f := &foreignRuns{b: b, mapper: m, proj: sessiontree.NewProjection(b.store, b.log), stop: cancel,
		done: make(chan struct{}), runs: map[string]*tail{}, suspect: map[string]bool{}}
	unsub := f.proj.Subscribe(m.onChanges)
	go func() {
		defer close(f.done)
		defer unsub()
		t := time.NewTicker(foreignPollEvery)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			f.poll(ctx)
		}
	}()
	return f
}

// close stops following and waits for the loop.
func (f *foreignRuns) close() {
	f.stop()
	<-f.done
}

// isLocal reports whether root is a run of this process: its processor
// recorded an event of it, or a prompt of this server runs it.
func (f *foreignRuns) isLocal(root string) bool {
	if _, ok := f.local.Load(root); ok {
		return true
	}
	if f.b.pool.Runtime().Running(root) {
		return true
	}
	st := f.b.facts.get(root)
	if st == nil {
		return false
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.active != nil || (st.runs != nil && st.runs.running)
}

// poll reads the running roots, starts following those of other
// processes (seen running on two polls in a row, so that a local run
// whose record was stored before its first event was watched is not
// taken for one; not while a tool call of the tree waits with no run
// going on, which this process may continue itself) and reads what the
// followed runs appended.
func (f *foreignRuns) poll(ctx context.Context) {
	roots, err := f.b.store.ListSessions(ctx, session.ListOptions{RootsOnly: true, Limit: foreignRoots})
	if err != nil {
		if ctx.Err() == nil {
			f.b.log.Warn("opencode: list sessions for runs of other processes", "err", err)
		}
		return
	}
	running := map[string]bool{}
	for _, r := range roots {
		if r.Status != session.StatusRunning || f.runs[r.ID] != nil || f.isLocal(r.ID) {
			continue
		}
		if w, err := f.b.pool.WaitingRun(ctx, r.ID); err != nil || w != "" {
			// A run stopped while a tool call waited for an answer (its
			// process died, or it waits in another one): this process
			// may go on with it (pool.Continue), as a run of its own.
			continue
		}
		running[r.ID] = true
		if f.suspect[r.ID] {
			f.follow(ctx, r)
		}
	}
	f.suspect = running
	for id, tl := range f.runs {
		if f.isLocal(id) {
			// This process went on with it (pool.Continue): its own
			// projection has it now.
			delete(f.runs, id)
			continue
		}
		if err := tl.poll(ctx, f.proj); err != nil {
			if ctx.Err() == nil {
				f.b.log.Warn("opencode: follow a run of another process", "session", id, "err", err)
			}
			continue
		}
		rec, err := f.b.store.GetSession(ctx, id)
		if err != nil || rec.Status != session.StatusRunning {
			// Its end is stored after its last events: one more read
			// takes them, then the record's end is published.
			_ = tl.poll(ctx, f.proj)
			delete(f.runs, id)
			if err == nil {
				f.ended(rec)
			}
		}
	}
	// Forget local roots not seen for a minute (their runs ended).
	f.local.Range(func(k, v any) bool {
		if time.Since(v.(time.Time)) > time.Minute {
			f.local.Delete(k)
		}
		return true
	})
}

// follow starts following a root from its last run's start: the session
// appears (created and busy) on the event streams, then its events.
func (f *foreignRuns) follow(ctx context.Context, rec session.Session) {
	recs, err := f.b.store.Events(ctx, rec.ID, 0)
	if err != nil {
		return
	}
	after := int64(0)
	for i := len(recs) - 1; i >= 0; i-- {
		if _, ok := recs[i].Event.(event.RunStarted); ok {
			after = recs[i].Seq - 1
			break
		}
	}
	f.runs[rec.ID] = newTail(f.b.store, rec.ID, after)
	f.mapper.change(sessiontree.SessionCreated{Info: rec}, time.Now())
}

// ended publishes a followed root's stored end when its log did not end
// it in the projection (its process died): its record, and idle.
func (f *foreignRuns) ended(rec session.Session) {
	st := f.b.facts.get(rec.ID)
	if st == nil || !st.busy.Load() {
		return
	}
	now := time.Now()
	f.mapper.change(sessiontree.SessionUpdated{Info: rec}, now)
	f.mapper.change(sessiontree.SessionIdle{SessionID: rec.ID}, now)
}

// tail rebuilds a root's stream from the store: the root's events as
// they are, its descendants' wrapped once relative to the root. Each
// poll reads the sessions parents first (a child is found by its
// spawn_session_start) and hands on what it read in store-wide order.
type tail struct {
	st    session.Store
	root  string
	order []string
	seen  map[string]int64
	info  map[string]event.SpawnSessionStart
	paths map[string][]string
}

func newTail(st session.Store, root string, after int64) *tail {
	return &tail{st: st, root: root, order: []string{root}, seen: map[string]int64{root: after},
		info: map[string]event.SpawnSessionStart{}, paths: map[string][]string{root: nil}}
}

func (t *tail) poll(ctx context.Context, proj *sessiontree.Projection) error {
	var batch []session.Record
	for i := 0; i < len(t.order); i++ {
		sid := t.order[i]
		recs, err := t.st.Events(ctx, sid, t.seen[sid])
		if err != nil {
			return err
		}
		for _, r := range recs {
			t.seen[sid] = r.Seq
			if sp, ok := r.Event.(event.SpawnSessionStart); ok {
				if _, known := t.info[sp.ChildSessionID]; !known {
					t.info[sp.ChildSessionID] = sp
					t.paths[sp.ChildSessionID] = append(slices.Clone(t.paths[sid]), sp.ChildSessionID)
					t.order = append(t.order, sp.ChildSessionID)
				}
			}
		}
		batch = append(batch, recs...)
	}
	slices.SortStableFunc(batch, func(a, b session.Record) int {
		switch {
		case a.GlobalSeq < b.GlobalSeq:
			return -1
		case a.GlobalSeq > b.GlobalSeq:
			return 1
		}
		return 0
	})
	for _, r := range batch {
		proj.Observe(ctx, t.root, t.wrap(r))
	}
	return nil
}

func (t *tail) wrap(r session.Record) event.Event {
	if r.SessionID == t.root {
		return r.Event
	}
	sp := t.info[r.SessionID]
	return event.Subagent{
		SourceName: sp.SourceName, SourceType: sp.SourceType, Depth: sp.Depth,
		ChildSessionID: r.SessionID, ParentSessionID: sp.ParentSessionID, ToolCallID: sp.ToolCallID,
		Path: t.paths[r.SessionID], Event: r.Event,
	}
}
