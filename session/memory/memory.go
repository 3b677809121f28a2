// Package memory is the in-memory session.Store: nothing touches the disk,
// everything is gone when the process ends. It is safe for concurrent use
// and passes the session/storetest conformance suite. Appends and reads of
// different sessions' messages and events do not wait for each other nor
// for the store-wide lock: each session has its own lock and is found
// through an index of its own; the store-wide lock guards the set of
// sessions, their tree and records, and is held exclusively only to
// create, update, delete or evict sessions.
//
// Sessions and messages are deep copies on the way in and on the way out,
// so a caller can never change what the store holds. Events are kept as the
// values they were appended as (the runtime never touches an event after
// emitting it, see package event), but for text deltas, which are kept
// compact and given back as equal values; their time is the wall clock
// when they were appended.
//
// # Retention
//
// The memory store is for runs and tests, not history; use SQLite to keep
// history. It keeps at most DefaultMaxRoots root sessions (sessions without
// a parent), or the number given with WithMaxRoots. When creating a root
// would exceed the limit, the store first drops the oldest finished root
// trees, in the order their roots were created: the root with its whole
// subtree, messages and events, as DeleteSession does. A root is finished
// when its status is not session.StatusRunning (idle counts as finished); a
// running root is never dropped, nor is anything under it, so the store may
// hold more roots than the limit while more than that many run. A root set
// back to running (a resumed session) is kept again until it finishes. What
// was dropped is gone: every call on it returns session.ErrNotFound.
//
// ListOptions.Thread is answered from a map of thread ids to their
// sessions, kept with every create, update, delete and eviction.
//
// Claims (session.Store.Claim) are kept with the store, which is private
// to its process: every claim is this process's and none outlives it.
package memory

import (
	"container/heap"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/model"
	"github.com/agentpool/agentpool/session"
)

// DefaultMaxRoots is the number of root sessions New keeps without
// WithMaxRoots. The memory store is for runs and tests, not history; use
// SQLite to keep history.
const DefaultMaxRoots = 1000

// Option configures a store made by New.
type Option func(*Store)

// WithMaxRoots sets the number of root sessions the store keeps (see
// Retention in the package doc). n <= 0 keeps everything until it is
// deleted.
func WithMaxRoots(n int) Option {
	return func(st *Store) { st.maxRoots = n }
}

// Store is an in-memory session.Store. The zero value is not usable; call New.
// It implements session.EventLogs, through which a run's recorder appends
// without AppendEvents: a type that embeds *Store to change AppendEvents
// must also define EventLog (returning session.ErrNotFound sends every
// append through its AppendEvents), or the embedded one bypasses it.
type Store struct {
	// mu guards the set of sessions, their tree, their records (entry.s),
	// the indexes and retention: it is held exclusively to change those.
	mu       sync.RWMutex
	sessions map[string]*entry
	// live finds a session's entry (id -> *entry) for the appends and
	// reads of its messages and events, one per event on the run path:
	// they take that session's own lock (entry.mu) and no other, so that
	// runs of different sessions do not wait for each other, nor for a
	// create or update of a session (issue 32: no process-wide lock on the
	// hot path). Written under mu with sessions; an entry that leaves it
	// is marked gone under its own lock first.
	live      sync.Map
	globalSeq atomic.Int64
	closed    atomic.Bool // set under mu
	// claims maps a claimed session to when it was claimed (claims.go),
	// under claimsMu, taken with mu held shared: a run's claim and release
	// do not hold the whole store.
	claimsMu sync.Mutex
	claims   map[string]time.Time
	threads  map[string][]*entry // thread (session.MetaThread) -> its sessions (threads.go)
	// capMu guards blobs, the contents of captures (captures.go), taken
	// with an entry's lock held or alone.
	capMu  sync.Mutex
	blobs  map[string]*blob
	capSeq atomic.Int64

	// Retention (maxRoots > 0 only). Every root is in exactly one of three
	// places: queued (in queue, in creation order, not yet looked at by
	// eviction), parked (running when eviction reached it: in no
	// container, found through its entry when it finishes) or ready
	// (parked, then finished: in the ready heap, oldest first). Parked and
	// ready roots left the front of the queue, so each of them is older
	// than every queued root: the oldest finished root is the top of the
	// ready heap if there is one, else the first finished root of the
	// queue.
	maxRoots  int
	roots     int    // live roots
	rootOrder uint64 // creation counter of roots
	queue     rootQueue
	ready     readyHeap
}

// entry is one session. Its children form a doubly linked list of
// siblings, so that the tree costs no allocation and a subtree is taken
// apart without a stack.
type entry struct {
	s session.Session

	// mu guards msgs, events and gone.
	mu     sync.Mutex
	msgs   []session.Message
	events eventLog
	gone   bool // removed from the store (deleted, evicted, closed)
	// caps and capKeys are the session's file captures (captures.go).
	caps    []storedCapture
	capKeys map[capKey]struct{}

	parent, child, prev, next *entry // child: first child; prev, next: siblings

	// Retention bookkeeping of a root in a bounded store.
	where place
	order uint64 // creation order among roots
	hidx  int    // index in the ready heap
}

type place uint8

const (
	untracked place = iota // a child, or a root of an unbounded store
	queued
	parked
	ready
	gone // removed while still in the queue
)

// firstMessages is the capacity of a session's conversation at its first
// append: a conversation has a prompt and an answer at least, and often a
// tool call and its result.
const firstMessages = 4

// New returns an empty store that keeps at most DefaultMaxRoots root
// sessions unless an option says otherwise.
func New(opts ...Option) *Store {
	st := &Store{sessions: map[string]*entry{}, maxRoots: DefaultMaxRoots}
	for _, o := range opts {
		o(st)
	}
	return st
}

var (
	_ session.Store     = (*Store)(nil)
	_ session.EventLogs = (*Store)(nil)
)

func notFound(id string) error { return fmt.Errorf("%w: %s", session.ErrNotFound, id) }

func clone(s session.Session) session.Session {
	if s.Metadata != nil {
		s.Metadata = session.CloneMetadata(s.Metadata)
	}
	return s
}

func running(e *entry) bool { return e.s.Status == session.StatusRunning }

// CreateSession implements session.Store.
func (st *Store) CreateSession(ctx context.Context, s session.Session) error {
	if err := session.CheckWrite(ctx, 1); err != nil {
		return err
	}
	if s.ID == "" {
		return errors.New("memory: session id is empty")
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.closed.Load() {
		return closedWrite(ctx, 1)
	}
	if _, ok := st.sessions[s.ID]; ok {
		return fmt.Errorf("%w: %s", session.ErrExists, s.ID)
	}
	var p *entry
	if s.ParentID != "" {
		var ok bool
		if p, ok = st.sessions[s.ParentID]; !ok {
			return notFound(s.ParentID)
		}
	}
	if s.CreatedAt.IsZero() {
		s.CreatedAt = time.Now()
	}
	if s.UpdatedAt.IsZero() {
		s.UpdatedAt = s.CreatedAt
	}
	e := &entry{s: clone(s)}
	if p != nil {
		e.parent, e.next = p, p.child
		if p.child != nil {
			p.child.prev = e
		}
		p.child = e
	} else if st.maxRoots > 0 {
		st.makeRoom()
		st.rootOrder++
		e.where, e.order = queued, st.rootOrder
		st.queue.push(e)
		st.roots++
	}
	st.sessions[s.ID] = e
	st.live.Store(s.ID, e)
	st.indexThread(e)
	return nil
}

// entryOf finds session id's entry for the appends and reads of its
// messages and events, without the store-wide lock, and returns it
// locked. The error is ErrClosed or ErrNotFound.
func (st *Store) entryOf(id string) (*entry, error) {
	if st.closed.Load() {
		return nil, session.ErrClosed
	}
	v, ok := st.live.Load(id)
	if !ok {
		// Close may have cleared live since the check above: a miss
		// on a closed store is ErrClosed, not a session that never was.
		if st.closed.Load() {
			return nil, session.ErrClosed
		}
		return nil, notFound(id)
	}
	e := v.(*entry)
	if err := st.lockLive(e, id); err != nil {
		return nil, err
	}
	return e, nil
}

// lockLive locks e, the entry of session id, unless it left the store:
// then the error is ErrClosed or ErrNotFound.
func (st *Store) lockLive(e *entry, id string) error {
	e.mu.Lock()
	if e.gone {
		e.mu.Unlock()
		if st.closed.Load() {
			return session.ErrClosed
		}
		return notFound(id)
	}
	return nil
}

// GetSession implements session.Store.
func (st *Store) GetSession(_ context.Context, id string) (session.Session, error) {
	st.mu.RLock()
	defer st.mu.RUnlock()
	if st.closed.Load() {
		return session.Session{}, session.ErrClosed
	}
	e, ok := st.sessions[id]
	if !ok {
		return session.Session{}, notFound(id)
	}
	return clone(e.s), nil
}

// UpdateSession implements session.Store.
func (st *Store) UpdateSession(ctx context.Context, id string, fn func(*session.Session)) error {
	if err := session.CheckWrite(ctx, 1); err != nil {
		return err
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.closed.Load() {
		return closedWrite(ctx, 1)
	}
	e, ok := st.sessions[id]
	if !ok {
		return notFound(id)
	}
	// fn works on the stored record itself (a copy for it would escape to
	// the heap on every update), with a metadata map of its own so that a
	// panic in fn can restore the record as it was.
	old := e.s
	e.s.Metadata = session.CloneMetadata(old.Metadata)
	done := false
	defer func() {
		if !done {
			e.s = old
		}
	}()
	fn(&e.s)
	done = true
	e.s.ID, e.s.ParentID, e.s.Depth, e.s.CreatedAt = old.ID, old.ParentID, old.Depth, old.CreatedAt
	e.s.UpdatedAt = time.Now()
	// fn may have kept a reference to the metadata map: keep a copy of
	// its own.
	e.s.Metadata = session.CloneMetadata(e.s.Metadata)
	if th := threadOf(&old); th != threadOf(&e.s) {
		st.unindexThread(e, th)
		st.indexThread(e)
	}
	switch {
	case e.where == parked && !running(e):
		heap.Push(&st.ready, e)
	case e.where == ready && running(e):
		heap.Remove(&st.ready, e.hidx)
		e.where = parked
	}
	return nil
}

// ListSessions implements session.Store.
func (st *Store) ListSessions(_ context.Context, opts session.ListOptions) ([]session.Session, error) {
	st.mu.RLock()
	defer st.mu.RUnlock()
	if st.closed.Load() {
		return nil, session.ErrClosed
	}
	// The entries are chosen and sorted first and only those returned are
	// copied: a caller that asks for the newest few of many sessions (a
	// server's periodic look at the roots) copies no other record.
	var es []*entry
	switch {
	case opts.Thread != "":
		for _, e := range st.threads[opts.Thread] {
			if opts.RootsOnly && e.parent != nil || opts.ParentID != "" && e.s.ParentID != opts.ParentID {
				continue
			}
			es = append(es, e)
		}
	case opts.ParentID != "":
		if p, ok := st.sessions[opts.ParentID]; ok && !opts.RootsOnly {
			for c := p.child; c != nil; c = c.next {
				es = append(es, c)
			}
		}
	default:
		for _, e := range st.sessions {
			if opts.RootsOnly && e.parent != nil {
				continue
			}
			es = append(es, e)
		}
	}
	slices.SortFunc(es, func(a, b *entry) int {
		if c := b.s.CreatedAt.Compare(a.s.CreatedAt); c != 0 {
			return c
		}
		// Session ids are descending: smaller sorts newer.
		switch {
		case a.s.ID < b.s.ID:
			return -1
		case a.s.ID > b.s.ID:
			return 1
		}
		return 0
	})
	if opts.Limit > 0 && len(es) > opts.Limit {
		es = es[:opts.Limit]
	}
	var out []session.Session
	if len(es) > 0 {
		out = make([]session.Session, len(es))
		for i, e := range es {
			out[i] = clone(e.s)
		}
	}
	return out, nil
}

// DeleteSession implements session.Store.
func (st *Store) DeleteSession(ctx context.Context, id string) error {
	if err := session.CheckWrite(ctx, 1); err != nil {
		return err
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.closed.Load() {
		return closedWrite(ctx, 1)
	}
	e, ok := st.sessions[id]
	if !ok {
		return notFound(id)
	}
	st.removeTree(e)
	return nil
}

// AppendMessages implements session.Store. The parts of all the messages
// of one call share one allocation, and so do their tool arguments.
func (st *Store) AppendMessages(ctx context.Context, sessionID string, msgs ...session.Message) error {
	if err := session.CheckWrite(ctx, len(msgs)); err != nil {
		return err
	}
	e, err := st.entryOf(sessionID)
	if err != nil {
		if errors.Is(err, session.ErrClosed) {
			return closedWrite(ctx, len(msgs))
		}
		return err
	}
	defer e.mu.Unlock()
	if len(msgs) == 0 {
		return nil
	}
	if e.msgs == nil {
		e.msgs = make([]session.Message, 0, max(firstMessages, len(msgs)))
	}
	parts, args := partsBuffers(msgs)
	for _, m := range msgs {
		m.Parts, parts, args = copyParts(m.Parts, parts, args)
		m.SessionID = sessionID
		e.msgs = append(e.msgs, m)
	}
	return nil
}

// partsBuffers returns empty buffers with room for the parts and the tool
// arguments of msgs.
func partsBuffers(msgs []session.Message) ([]model.Part, []byte) {
	var np, na int
	for i := range msgs {
		np += len(msgs[i].Parts)
		for j := range msgs[i].Parts {
			na += len(msgs[i].Parts[j].Args)
		}
	}
	var parts []model.Part
	if np > 0 {
		parts = make([]model.Part, 0, np)
	}
	var args []byte
	if na > 0 {
		args = make([]byte, 0, na)
	}
	return parts, args
}

// copyParts copies src into the room left in parts and args (made by
// partsBuffers) and returns the copy with what is left. The copy's
// capacity is its length, so that appending to it never writes into the
// next message's parts. nil stays nil and empty stays empty.
func copyParts(src, parts []model.Part, args []byte) ([]model.Part, []model.Part, []byte) {
	if src == nil {
		return nil, parts, args
	}
	if len(src) == 0 {
		return []model.Part{}, parts, args
	}
	start := len(parts)
	for _, p := range src {
		if p.Args != nil {
			if len(p.Args) == 0 {
				p.Args = json.RawMessage{}
			} else {
				a := len(args)
				args = append(args, p.Args...)
				p.Args = args[a:len(args):len(args)]
			}
		}
		parts = append(parts, p)
	}
	return parts[start:len(parts):len(parts)], parts, args
}

// Messages implements session.Store.
func (st *Store) Messages(_ context.Context, sessionID string) ([]session.Message, error) {
	e, err := st.entryOf(sessionID)
	if err != nil {
		return nil, err
	}
	defer e.mu.Unlock()
	out := make([]session.Message, len(e.msgs))
	parts, args := partsBuffers(e.msgs)
	for i, m := range e.msgs {
		m.Parts, parts, args = copyParts(m.Parts, parts, args)
		out[i] = m
	}
	return out, nil
}

// AppendEvents implements session.Store.
func (st *Store) AppendEvents(ctx context.Context, sessionID string, evs ...event.Event) error {
	return st.appendEvents(ctx, session.WritesOf(ctx), sessionID, nil, evs)
}

// EventLog implements session.EventLogs: the log's appends find the
// session's entry and the run's account of writes without a look-up.
func (st *Store) EventLog(ctx context.Context, id string) (session.EventLog, error) {
	e, err := st.entryOf(id)
	if err != nil {
		return nil, err
	}
	e.mu.Unlock()
	return &sessionLog{st: st, ctx: ctx, w: session.WritesOf(ctx), e: e, id: id}, nil
}

// sessionLog is the event log of one session of a Store (EventLog). Its
// entry, once gone, stays gone: its appends fail with ErrNotFound.
type sessionLog struct {
	st  *Store
	ctx context.Context
	w   *session.RunWrites // of ctx
	e   *entry
	id  string
}

func (l *sessionLog) AppendEvents(evs ...event.Event) error {
	return l.st.appendEvents(l.ctx, l.w, l.id, l.e, evs)
}

// appendEvents appends evs to the log of session sessionID, whose entry is
// e when the caller has it (sessionLog), else found through live; w is the
// account of ctx's writes.
func (st *Store) appendEvents(ctx context.Context, w *session.RunWrites, sessionID string, e *entry, evs []event.Event) error {
	if err := w.Check(len(evs)); err != nil {
		return err
	}
	for _, ev := range evs {
		if err := check(ev); err != nil {
			return session.ReportWrite(ctx, len(evs), err)
		}
	}
	var err error
	if e == nil {
		e, err = st.entryOf(sessionID)
	} else {
		err = st.lockLive(e, sessionID)
	}
	if err != nil {
		if errors.Is(err, session.ErrClosed) {
			return closedWrite(ctx, len(evs))
		}
		return err
	}
	defer e.mu.Unlock()
	if len(evs) == 0 {
		return nil
	}
	now := time.Now().UnixNano()
	// The global sequence is taken under the session's lock: within a
	// session it grows with seq; across sessions it orders the appends
	// as they took their numbers.
	for _, ev := range evs {
		e.events.add(ev, st.globalSeq.Add(1), now)
	}
	return nil
}

// check rejects what could not be encoded on the wire: nil events and
// subagent wrappers around nothing or around another wrapper.
func check(ev event.Event) error {
	if ev == nil {
		return errors.New("memory: append nil event")
	}
	if s, ok := ev.(event.Subagent); ok {
		if s.Event == nil {
			return errors.New("memory: subagent event wraps no event")
		}
		if _, nested := s.Event.(event.Subagent); nested {
			return errors.New("memory: subagent event wraps a subagent event")
		}
	}
	return nil
}

// Events implements session.Store.
func (st *Store) Events(_ context.Context, sessionID string, afterSeq int64) ([]session.Record, error) {
	e, err := st.entryOf(sessionID)
	if err != nil {
		return nil, err
	}
	defer e.mu.Unlock()
	if afterSeq < 0 {
		afterSeq = 0
	}
	n := int64(e.events.len())
	if afterSeq >= n {
		return nil, nil
	}
	out := make([]session.Record, 0, n-afterSeq)
	for seq := afterSeq + 1; seq <= n; seq++ {
		r := e.events.at(int(seq - 1))
		out = append(out, session.Record{
			SessionID: sessionID, Seq: seq, GlobalSeq: r.gseq, Time: time.Unix(0, r.nano), Event: e.events.event(r),
		})
	}
	return out, nil
}

// Flush implements session.Store; memory writes are immediate.
func (st *Store) Flush(context.Context) error {
	st.mu.RLock()
	defer st.mu.RUnlock()
	if st.closed.Load() {
		return session.ErrClosed
	}
	return nil
}

// Close implements session.Store. The contents are released; every later
// call returns session.ErrClosed.
func (st *Store) Close() error {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.closed.Store(true)
	for _, e := range st.sessions {
		e.markGone()
	}
	st.live.Clear()
	st.sessions = map[string]*entry{}
	st.claimsMu.Lock()
	st.claims = nil
	st.claimsMu.Unlock()
	st.capMu.Lock()
	st.blobs = nil
	st.capMu.Unlock()
	st.queue, st.ready, st.roots = rootQueue{}, nil, 0
	return nil
}

// markGone tells the appends and reads that found e before it left the
// store that it is gone.
func (e *entry) markGone() {
	e.mu.Lock()
	e.gone = true
	e.mu.Unlock()
}
