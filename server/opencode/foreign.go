package opencode

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/record"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/sessiontree"
)

// Runs of other processes on the server's store (an `agentpool run` on
// the same SQLite file or PostgreSQL database) are followed like the
// server's own: a root that runs and is no run of this process is
// followed from its log (session.TreeTail: its own events, and its
// descendants' wrapped as a run in this process emits them) into a
// projection of its own, whose Changes the event mapper publishes as it
// does the local runs': the sessions appear (session.created,
// session.status busy), their messages stream, and they end
// (session.idle) on every event stream, and GET /session/status lists
// them while they run.
//
// How the store is watched depends on what it offers. A store that
// notifies of appends (session.EventNotifier: PostgreSQL's NOTIFY) is
// read after its notices only: a notice of a root that runs and is not
// local makes it a suspect, a notice of a followed tree's session reads
// that tree, and one look foreignRecheck later confirms the suspects and
// reads the records of the trees read since (a run's end is a record
// update, which sends no notice); an idle store costs nothing. Any other
// store (SQLite) is polled: every foreignPollEvery the server lists its
// newest foreignRoots roots and reads the followed trees.
//
// A root is followed once seen running on two looks in a row, so that a
// local run whose record was stored before its first event was watched
// is not taken for one; not while a tool call of the tree waits with no
// run going on, which this process may continue itself.
//
// Bounds: a poll lists at most foreignRoots roots; a notice costs at
// most one read of a record (a session of no followed tree, at most
// foreignIgnored of which are remembered as not roots) or of the new
// events of one tree; each followed run costs one read of each of its
// sessions' logs per poll or notice. A root whose process died while it
// ran stays listed as running until the store's recovery closes it
// (docs/web.md).

var (
	// foreignPollEvery is how often a store without notices is read for
	// runs of other processes; foreignRoots how many of its newest roots
	// are looked at.
	foreignPollEvery = 250 * time.Millisecond
	foreignRoots     = 500
	// foreignRecheck is how long after a notice the suspects and the
	// trees it touched are looked at again, on a store with notices.
	foreignRecheck = 250 * time.Millisecond
	// foreignIgnored bounds the sessions remembered as none of a
	// followed tree's (children of local runs): past it they are
	// forgotten, and read again on their next notice.
	foreignIgnored = 4096
	// foreignEndChecks is how many looks a tree whose log ended its run
	// gets for its record to end too, on a store with notices.
	foreignEndChecks = 20
)

// foreignRuns follows the runs of other processes. Its maps are the
// loop's own (no lock) but local, which the processor's watcher writes.
type foreignRuns struct {
	b      *base
	mapper *eventMapper
	proj   *sessiontree.Projection
	// local holds the roots of this process's runs (owner -> the second
	// of the last event seen, a *atomic.Int64 of Unix seconds, for
	// pruning): never followed.
	local sync.Map

	stop context.CancelFunc
	done chan struct{}

	runs    map[string]*followed // followed roots
	suspect map[string]int       // running, not local: the look that first saw it
	look    int                  // looks so far (polls, or rechecks after notices)

	// With notices: the trees read since the last look, the sessions
	// passed over, and the timer of the next look.
	notifying bool
	dirty     map[string]bool
	ignored   map[string]bool
	recheck   *time.Timer
	armed     bool
}

// followed is a root followed from its log.
type followed struct {
	tail   *session.TreeTail
	checks int // looks given to a record that runs after its log ended
}

// localRuns is the processor's watcher of the server: it notes each
// local run's root before the projection takes its event.
type localRuns struct {
	next record.Watcher
	f    *foreignRuns
}

func (l localRuns) Observe(ctx context.Context, owner string, e event.Event) {
	// A root's entry is made once and its second moved in place, not a
	// map store (and a boxed time) per event.
	now := time.Now().Unix()
	if v, ok := l.f.local.Load(owner); ok {
		if seen := v.(*atomic.Int64); seen.Load() != now {
			seen.Store(now)
		}
	} else {
		seen := new(atomic.Int64)
		seen.Store(now)
		l.f.local.Store(owner, seen)
	}
	l.next.Observe(ctx, owner, e)
}

// WatchRun returns the watcher of one local run (record.RunWatcher): every
// event of every local run comes here, and the run's entry in local and
// the projection's watcher of the run are found once, not per event.
func (l localRuns) WatchRun(owner string) record.Watcher {
	seen := new(atomic.Int64)
	seen.Store(time.Now().Unix())
	if v, loaded := l.f.local.LoadOrStore(owner, seen); loaded {
		seen = v.(*atomic.Int64)
	}
	next := l.next
	if rw, ok := next.(record.RunWatcher); ok {
		next = rw.WatchRun(owner)
	}
	return &localRun{f: l.f, seen: seen, next: next}
}

// localRun is localRuns' watcher of one run.
type localRun struct {
	f    *foreignRuns
	seen *atomic.Int64 // the run's entry in f.local
	next record.Watcher
}

func (l *localRun) Observe(ctx context.Context, owner string, e event.Event) {
	if now := time.Now().Unix(); l.seen.Load() != now {
		l.seen.Store(now)
		// Once a second at most: forgetLocal may have dropped the entry
		// while the run went a minute without an event.
		if v, ok := l.f.local.Load(owner); !ok || v != l.seen {
			l.f.local.Store(owner, l.seen)
		}
	}
	l.next.Observe(ctx, owner, e)
}

func startForeign(b *base, m *eventMapper) *foreignRuns {
	ctx, cancel := context.WithCancel(context.Background())
	f := &foreignRuns{b: b, mapper: m, proj: sessiontree.NewProjection(b.store, b.log), stop: cancel,
		done: make(chan struct{}), runs: map[string]*followed{}, suspect: map[string]int{},
		dirty: map[string]bool{}, ignored: map[string]bool{}, recheck: time.NewTimer(time.Hour)}
	f.recheck.Stop()
	unsub := f.proj.Subscribe(m.onChanges)
	go func() {
		defer close(f.done)
		defer unsub()
		f.loop(ctx)
	}()
	return f
}

// loop watches the store until ctx ends: on its notices when it sends
// them, else on a timer.
func (f *foreignRuns) loop(ctx context.Context) {
	defer f.recheck.Stop()
	notices := f.subscribe(ctx)
	var ticker *time.Ticker
	defer func() {
		if ticker != nil {
			ticker.Stop()
		}
	}()
	var tick <-chan time.Time
	if notices == nil {
		ticker = time.NewTicker(foreignPollEvery)
		tick = ticker.C
	} else {
		// Notices come for appends after the subscription: the runs
		// already going on are found by one list.
		f.scan(ctx)
		f.arm()
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick:
			f.scan(ctx)
			for id, fl := range f.runs {
				f.read(ctx, id, fl, true)
			}
			f.forgetLocal()
		case id, ok := <-notices:
			if !ok {
				// The store stopped sending them: poll.
				notices, f.notifying = nil, false
				ticker = time.NewTicker(foreignPollEvery)
				tick = ticker.C
				continue
			}
			f.noticed(ctx, id)
		case <-f.recheck.C:
			f.armed = false
			f.look++
			f.confirm(ctx)
			dirty := f.dirty
			f.dirty = map[string]bool{} // a read may mark its tree again
			for id := range dirty {
				if fl := f.runs[id]; fl != nil {
					f.read(ctx, id, fl, true)
				}
			}
			f.forgetLocal()
		}
	}
}

// close stops following and waits for the loop.
func (f *foreignRuns) close() {
	f.stop()
	<-f.done
}

// subscribe returns the store's notices of appends, nil when it sends
// none.
func (f *foreignRuns) subscribe(ctx context.Context) <-chan string {
	n := session.Notifier(f.b.store)
	if n == nil {
		return nil
	}
	ch, err := n.SubscribeEvents(ctx)
	if err != nil {
		if ctx.Err() == nil {
			f.b.log.Warn("opencode: subscribe to the store's notices; polling it for runs of other processes", "err", err)
		}
		return nil
	}
	f.notifying = true
	return ch
}

// arm starts the timer of the next look after notices, unless it runs.
func (f *foreignRuns) arm() {
	if !f.armed {
		f.armed = true
		f.recheck.Reset(foreignRecheck)
	}
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

// candidate reports whether rec is a root that runs, is not followed and
// is no run of this process, nor one stopped while a tool call waited for
// an answer (its process died, or it waits in another one): this process
// may go on with that one (pool.Continue), as a run of its own.
func (f *foreignRuns) candidate(ctx context.Context, rec session.Session) bool {
	if rec.ParentID != "" || rec.Status != session.StatusRunning || f.runs[rec.ID] != nil || f.isLocal(rec.ID) {
		return false
	}
	w, err := f.b.pool.WaitingRun(ctx, rec.ID)
	return err == nil && w == ""
}

// consider follows a candidate seen on an earlier look, and makes one
// seen first a suspect.
func (f *foreignRuns) consider(ctx context.Context, rec session.Session, look int) {
	first, ok := f.suspect[rec.ID]
	switch {
	case !ok:
		f.suspect[rec.ID] = look
	case first < f.look:
		delete(f.suspect, rec.ID)
		f.follow(ctx, rec)
	}
}

// scan is a look at the store's newest roots: it follows the candidates
// that were suspects, and keeps those running as the only suspects.
func (f *foreignRuns) scan(ctx context.Context) {
	roots, err := f.b.store.ListSessions(ctx, session.ListOptions{RootsOnly: true, Limit: foreignRoots})
	if err != nil {
		if ctx.Err() == nil {
			f.b.log.Warn("opencode: list sessions for runs of other processes", "err", err)
		}
		return
	}
	f.look++
	running := map[string]bool{}
	for _, r := range roots {
		if f.candidate(ctx, r) {
			running[r.ID] = true
			f.consider(ctx, r, f.look)
		}
	}
	for id := range f.suspect {
		if !running[id] {
			delete(f.suspect, id)
		}
	}
}

// noticed reads what a notice of an append to session id concerns: the
// tree of a followed root that has it, or the record of a session no
// followed tree has (a root that runs elsewhere becomes a suspect).
func (f *foreignRuns) noticed(ctx context.Context, id string) {
	for root, fl := range f.runs {
		if fl.tail.Has(id) {
			f.read(ctx, root, fl, false)
			f.dirty[root] = true
			f.arm()
			return
		}
	}
	if f.ignored[id] || f.isLocal(id) {
		return
	}
	rec, err := f.b.store.GetSession(ctx, id)
	if err != nil {
		return
	}
	if rec.ParentID != "" {
		// A child of no followed tree (a local run's): its tree's root
		// is noticed first, and followed through it.
		if len(f.ignored) >= foreignIgnored {
			clear(f.ignored)
		}
		f.ignored[id] = true
		return
	}
	if f.candidate(ctx, rec) {
		// Seen first on the next look: followed on the one after, at
		// least foreignRecheck from now.
		f.consider(ctx, rec, f.look+1)
		f.arm()
	}
}

// confirm is a look at the suspects after notices: each that is still a
// candidate is followed once seen on an earlier look.
func (f *foreignRuns) confirm(ctx context.Context) {
	for id := range f.suspect {
		rec, err := f.b.store.GetSession(ctx, id)
		if err != nil || !f.candidate(ctx, rec) {
			delete(f.suspect, id)
			continue
		}
		f.consider(ctx, rec, f.look)
	}
	if len(f.suspect) > 0 {
		f.arm()
	}
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
	f.runs[rec.ID] = &followed{tail: session.NewTreeTail(f.b.store, rec.ID, after)}
	if f.notifying {
		f.dirty[rec.ID] = true // read on this look
	}
	f.mapper.change(sessiontree.SessionCreated{Info: rec}, time.Now())
}

// read hands what a followed tree appended to the projection; with
// checkEnd, it reads the root's record too, and stops following a run
// that ended.
func (f *foreignRuns) read(ctx context.Context, root string, fl *followed, checkEnd bool) {
	if f.isLocal(root) {
		// This process went on with it (pool.Continue): its own
		// projection has it now.
		delete(f.runs, root)
		return
	}
	if !f.observe(ctx, root, fl) || !checkEnd {
		return
	}
	rec, err := f.b.store.GetSession(ctx, root)
	if err != nil || rec.Status != session.StatusRunning {
		// Its end is stored after its last events: one more read
		// takes them, then the record's end is published.
		f.observe(ctx, root, fl)
		delete(f.runs, root)
		if err == nil {
			f.ended(rec)
		}
		return
	}
	if st := f.b.facts.get(root); f.notifying && st != nil && !st.busy.Load() && fl.checks < foreignEndChecks {
		// Its log ended the run, its record not yet: no notice comes
		// for a record, so look again.
		fl.checks++
		f.dirty[root] = true
		f.arm()
	}
}

// observe reads a followed tree's new events into the projection.
func (f *foreignRuns) observe(ctx context.Context, root string, fl *followed) bool {
	rs, err := fl.tail.Poll(ctx)
	if err != nil {
		if ctx.Err() == nil {
			f.b.log.Warn("opencode: follow a run of another process", "session", root, "err", err)
		}
		return false
	}
	if len(rs) > 0 {
		fl.checks = 0
	}
	for _, r := range rs {
		f.proj.Observe(ctx, root, r.Event)
	}
	return true
}

// forgetLocal forgets the local roots not seen for a minute (their runs
// ended).
func (f *foreignRuns) forgetLocal() {
	now := time.Now().Unix()
	f.local.Range(func(k, v any) bool {
		if now-v.(*atomic.Int64).Load() > int64(time.Minute/time.Second) {
			f.local.Delete(k)
		}
		return true
	})
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
