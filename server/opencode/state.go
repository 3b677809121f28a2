package opencode

import (
	"cmp"
	"context"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentpool/agentpool/pool"
	"github.com/agentpool/agentpool/server/opencode/internal/wire"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/sessiontree"
)

// base is what the parts of the server (the route groups, the event
// mapper) share: what New sets and never changes, and the handles of the
// shared state, each of which guards itself. It holds no lock of its own.
type base struct {
	pool    *pool.Pool
	store   session.Store
	opts    Options
	log     *slog.Logger
	dir     string
	root    string // the workspace of the pool's file tools (relative titles)
	started time.Time
	models  map[string]wire.ModelRef // node name -> its model
	proj    *sessiontree.Projection

	hub    *hub          // the event bus (bus.go)
	facts  *sessionFacts // per-session state, transcripts included
	budget *promptBudget // the prompt budget (promptbudget.go)
	gate   runGate       // admits runs until Close

	// runs is the parent of every run's context: it ends on Close.
	runs     context.Context
	stopRuns context.CancelFunc

	// The route groups that others call into.
	prompts *promptsAPI
	history *historyAPI
	streams *eventStreams
}

// runGate admits runs until the server closes, and lets Close wait for
// those it admitted. Its lock makes the check of closing and wg.Add one
// step: without it an enqueue could pass the check, Close could then
// start wg.Wait, and the Add would race with the Wait.
type runGate struct {
	mu      sync.Mutex
	closing bool
	wg      sync.WaitGroup
}

// enter admits one run (false once closing); the run calls wg.Done.
func (g *runGate) enter() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closing {
		return false
	}
	g.wg.Add(1)
	return true
}

// close refuses new runs and waits for those admitted.
func (g *runGate) close() {
	g.mu.Lock()
	g.closing = true
	g.mu.Unlock()
	g.wg.Wait()
}

// sessState is what the server keeps of one session. Its lock is the
// session's: the mapping of the session's events and the server's own
// writes to it (a prompt's user message, the end of a run) take it, and
// publish the session's events while they hold it, so that they reach the
// bus in the order the state changed. No lock of another session is
// taken while it is held (eviction only tries others: TryLock). Besides
// its fields it guards the maps of trans (byID, parts and the message
// list), which index the same messages and change together.
type sessState struct {
	// dir and title are set without the lock: read by every conversion
	// of a session (wireSession), of this session or of its children.
	dir   atomic.Pointer[string] // the session's directory, once known
	title atomic.Pointer[string] // the title set through this server, if any
	// busy is written under mu (with its session.status event) and read
	// without it by GET /session/status and eviction.
	busy atomic.Bool
	used atomic.Int64 // LRU clock of trans (sessionFacts.tick)

	mu      sync.Mutex
	trans   *transcript  // the session's messages (nil: not in memory)
	runs    *sessionRuns // the queue of this server's prompts (nil: none yet)
	active  *activeRun   // the run in progress, a root of this server's
	deleted bool         // dropped from sessionFacts: keep nothing new
}

// sessionFacts holds the sessState of every session the server has seen.
// The map is a sync.Map: sessions are added once and read on every event
// by many runs at once, which is the case it is built for; no lock is
// shared by sessions. The transcripts in memory are bounded
// (Options.MaxSessions): cached counts them, and the least recently used
// of sessions not running are dropped past the bound.
type sessionFacts struct {
	m      sync.Map // session id -> *sessState
	tick   atomic.Int64
	cached atomic.Int64 // sessions whose trans is not nil
	max    int
	// evicting lets one caller at a time scan for transcripts to drop;
	// the others go on (TryLock), since one scan frees room for many.
	evicting sync.Mutex
	// added counts the transcripts ever made; past the bound, a scan
	// runs when it reaches rescanAt, MaxSessions/8 after the last scan:
	// a scan that could not get under the bound (more sessions running
	// than MaxSessions) is not repeated at every new transcript, each of
	// which would visit every session again for nothing.
	added, rescanAt atomic.Int64
}

func newSessionFacts(max int) *sessionFacts { return &sessionFacts{max: max} }

// get returns the state of sid, nil when there is none.
func (f *sessionFacts) get(sid string) *sessState {
	if v, ok := f.m.Load(sid); ok {
		return v.(*sessState)
	}
	return nil
}

// ensure returns the state of sid, creating it.
func (f *sessionFacts) ensure(sid string) *sessState {
	if st := f.get(sid); st != nil {
		return st
	}
	v, _ := f.m.LoadOrStore(sid, &sessState{})
	return v.(*sessState)
}

// drop forgets sid (a deleted session): its transcript is let go and a
// holder of the old state keeps nothing new in it. It returns the state
// dropped, nil when there was none; st.mu is not held by the caller.
func (f *sessionFacts) drop(sid string) *sessState {
	v, ok := f.m.LoadAndDelete(sid)
	if !ok {
		return nil
	}
	st := v.(*sessState)
	st.mu.Lock()
	st.deleted = true
	if st.trans != nil {
		st.trans = nil
		f.cached.Add(-1)
	}
	st.mu.Unlock()
	return st
}

// touch returns st's transcript, creating it when create is set (else nil
// when there is none), and marks it used. st.mu is held. A new transcript
// past the bound starts an eviction.
func (f *sessionFacts) touch(st *sessState, create bool) *transcript {
	st.used.Store(f.tick.Add(1))
	if st.trans != nil || !create {
		return st.trans
	}
	t := newTranscript()
	if st.deleted {
		return t // kept by nobody: the session is gone
	}
	st.trans = t
	f.add()
	return t
}

// add counts a new transcript and scans for some to drop past the bound.
func (f *sessionFacts) add() {
	n := f.added.Add(1)
	if f.cached.Add(1) > int64(f.max) && n >= f.rescanAt.Load() {
		f.evict()
	}
}

// keep installs t as st's transcript unless it has one, and returns the
// one st has. st.mu is held.
func (f *sessionFacts) keep(st *sessState, t *transcript) *transcript {
	st.used.Store(f.tick.Add(1))
	if st.trans != nil || st.deleted {
		return cmp.Or(st.trans, t)
	}
	st.trans = t
	f.add()
	return t
}

// evict drops the least recently used transcripts of sessions that are
// not running until the cache is an eighth under its bound: one scan per
// MaxSessions/8 new transcripts, not one per new transcript (a scan visits
// every session), also when a scan could not get under the bound (running
// sessions are never dropped: with more of them than MaxSessions, the
// bound is exceeded by them and at most MaxSessions/8 idle ones). It may
// run while the caller holds one session's lock (whose transcript is then
// kept): the others are only tried, never waited for, so no two locks of
// sessions are ever waited for at once.
func (f *sessionFacts) evict() {
	if !f.evicting.TryLock() {
		return
	}
	defer f.evicting.Unlock()
	type idle struct {
		st   *sessState
		used int64
	}
	var victims []idle
	f.m.Range(func(_, v any) bool {
		st := v.(*sessState)
		if !st.busy.Load() {
			victims = append(victims, idle{st, st.used.Load()})
		}
		return true
	})
	slices.SortFunc(victims, func(a, b idle) int { return cmp.Compare(a.used, b.used) })
	target := int64(f.max - f.max/8)
	for _, v := range victims {
		if f.cached.Load() <= target {
			break
		}
		if !v.st.mu.TryLock() {
			continue // in use now: not the least recently used
		}
		if v.st.trans != nil && !v.st.busy.Load() && v.st.active == nil {
			v.st.trans = nil
			f.cached.Add(-1)
		}
		v.st.mu.Unlock()
	}
	f.rescanAt.Store(f.added.Load() + int64(max(f.max/8, 1)))
}

// transcripts is the number of transcripts in memory.
func (f *sessionFacts) transcripts() int { return int(f.cached.Load()) }

// each calls fn for every session's state, in no order.
func (f *sessionFacts) each(fn func(sid string, st *sessState)) {
	f.m.Range(func(k, v any) bool {
		fn(k.(string), v.(*sessState))
		return true
	})
}

// dirOf returns the directory of a session: its recorded one, else the
// one in its metadata, else its parent's, else the server's; the answer
// is recorded. It takes no lock of a session (dir is atomic), so it may
// be called under any.
func (s *base) dirOf(rec session.Session) string {
	st := s.facts.ensure(rec.ID)
	if d := st.dir.Load(); d != nil {
		return *d
	}
	d, _ := rec.Metadata[MetadataDirectory].(string)
	if d == "" && rec.ParentID != "" {
		if pst := s.facts.get(rec.ParentID); pst != nil && pst.dir.Load() != nil {
			d = *pst.dir.Load()
		} else if p, err := s.store.GetSession(context.Background(), rec.ParentID); err == nil {
			d = s.dirOf(p)
		}
	}
	if d == "" {
		d = s.dir
	}
	st.dir.CompareAndSwap(nil, &d)
	return *st.dir.Load()
}

// dirOfID is the recorded directory of session sid, else the server's.
func (s *base) dirOfID(sid string) string { return s.facts.get(sid).dirOr(s.dir) }

// dirOr is the recorded directory of the session whose state is st, else
// (none recorded, or st nil) def.
func (st *sessState) dirOr(def string) string {
	if st != nil {
		if d := st.dir.Load(); d != nil {
			return *d
		}
	}
	return def
}
