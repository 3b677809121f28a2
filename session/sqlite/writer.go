package sqlite

import (
	"errors"
	"time"

	sqlitedrv "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/agentpool/agentpool/session"
)

// maxKnown bounds the cache of session ids known to exist.
const maxKnown = 1 << 17

type opKind uint8

const (
	opEvents opKind = iota
	opMessages
	opCreate
	opUpdate
	opDelete
	opRelease
	opClaim
	opBarrier
	opStop
	opGet // a read of a session record in the open transaction
)

// op is one queued write. Events and messages are async (no done
// channel); the others have a caller waiting on done, answered once the op
// is committed, or, for a deferred write and a read, once it is applied
// (tx.go).
type op struct {
	kind     opKind
	deferred bool // create, update: answered once applied (session.WriteOptions.DeferCommits)
	answered bool // done has been sent to (owned by the writer's turn)
	refused  bool // not applied: its run had lost a write (session.CheckWrite)
	sid      string
	pk       int64 // events, messages: the session's pk
	at       int64 // enqueue time, Unix ns
	evs      []encEvent
	msgs     []encMessage
	done     chan result
	res      result
	// lost is the account of the writes of the op's run
	// (session.TrackWrites), nil for a write made outside one.
	lost    *session.RunWrites
	*opSync // nil for appends
}

// opSync is the part of an op that only synchronous ops use: an append's
// op stays small (the queue holds tens of thousands of them).
type opSync struct {
	args    []any // create: the session's column values after id and parent_id
	pid     string
	fn      func(*session.Session)
	newPK   int64     // create: the pk given to the session
	deleted []string  // delete: the ids removed
	delPKs  []int64   // delete: their pks
	dead    []string  // claim: the dead stores whose claims were in the way
	taken   []adopted // claim: the sessions taken over from them
	upd     []any     // update: the statement's arguments, once fn has run
	// create, update: the record written, nil when it cannot be cached
	// (cache.go); get: the record read.
	rec *session.Session
}

// needsCommit reports whether o's caller waits for its commit. A claim's
// does not: its check and insert run in the open transaction, which holds
// the database's write lock until it commits the claim, so that no other
// process can claim in between (doc.go, "Deferred commits").
func (o *op) needsCommit() bool {
	return o.done != nil && !o.deferred && o.kind != opGet && o.kind != opClaim
}

// isWrite reports whether o writes (barriers, stops and reads do not).
func (o *op) isWrite() bool {
	return o.kind != opBarrier && o.kind != opStop && o.kind != opGet
}

// eventRow is one row of the events table waiting to be inserted.
type eventRow struct {
	pk, seq, at int64
	kind, data  string
}

type result struct {
	err      error
	panicked bool
	panicV   any
}

type encEvent struct {
	kind string
	data string
}

type encMessage struct {
	id, agent, role string
	synthetic       bool
	created         int64
	parts           []encPart
}

type encPart struct {
	kind, text, callID, tool string
	args                     any // nil or the JSON text
	isError                  bool
}

func (o *op) items() int {
	switch o.kind {
	case opEvents:
		return len(o.evs)
	case opMessages:
		return len(o.msgs)
	}
	return 1
}

func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// ---- the writer ----
//
// Writes are applied by whoever holds the writer's turn (Store.writing):
// a caller of a synchronous write that finds no one applying takes the
// turn and applies the queue (its own op last) on its own goroutine, so
// that a write on an idle store costs no goroutine switch; callers that
// arrive meanwhile queue, and the writer goroutine (run) applies what they
// queued as soon as the turn is free. Ops are taken from the queue in
// order and one batch at a time, and applied in that order in one open
// transaction (tx.go), which is committed when an op needs it, and at the
// latest Options.Linger after it began: the writer goroutine sees to that,
// and commits the asynchronous appends after at most Linger.

// take removes the queue's ops for a commit and gives the caller the
// writer's turn; s.mu is held.
func (s *Store) take() []*op {
	batch := s.queue
	s.queue = nil
	s.queued = 0
	s.syncOps = false
	s.writing = true
	s.space.Broadcast()
	return batch
}

// release gives the writer's turn back after batch was applied by a
// caller, waking the writer goroutine when ops wait, when a transaction is
// left open (it commits it in time) or when batch held the stop op, which
// the writer goroutine must see to exit.
func (s *Store) release(stopped bool) {
	s.mu.Lock()
	s.writing = false
	if stopped {
		s.stopped = true
	}
	more := len(s.queue) > 0 || stopped || s.txOpen
	urgent := s.syncOps || stopped
	s.mu.Unlock()
	if more {
		signal(s.wake)
	}
	if urgent {
		signal(s.urgent)
	}
}

func (s *Store) run() {
	defer close(s.done)
	t := time.NewTimer(time.Hour)
	t.Stop()
	for {
		<-s.wake
		s.mu.Lock()
		if s.stopped {
			s.mu.Unlock()
			return
		}
		if s.writing || (len(s.queue) == 0 && !s.txOpen) {
			s.mu.Unlock() // the caller that holds the turn wakes us after
			continue
		}
		urgent := s.syncOps || s.queued >= s.opts.BatchSize
		wait := s.opts.Linger
		if s.txOpen {
			wait -= time.Since(s.txStart)
		}
		s.mu.Unlock()
		if !urgent && wait > 0 {
			t.Reset(wait)
			select {
			case <-s.urgent:
				urgent = true
			case <-t.C:
			}
			t.Stop()
		}
		s.mu.Lock()
		if s.writing || (len(s.queue) == 0 && !s.txOpen) {
			s.mu.Unlock()
			signal(s.wake) // look again: a stop may have come meanwhile
			continue
		}
		batch := s.take()
		s.mu.Unlock()
		// Woken by a waiting caller: commit only if its op needs it.
		// After the linger: commit what is open.
		stop := s.process(batch, !urgent)
		s.release(stop)
		if stop {
			return
		}
	}
}

func isForeignKey(err error) bool { return isConstraint(err, sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY) }

// isConstraint reports whether err is SQLite's extended result code code.
func isConstraint(err error, code int) bool {
	var se *sqlitedrv.Error
	return errors.As(err, &se) && se.Code() == code
}

func runUpdate(fn func(*session.Session), s *session.Session) (r result) {
	defer func() {
		if v := recover(); v != nil {
			r = result{panicked: true, panicV: v}
		}
	}()
	fn(s)
	return result{}
}
