package sqlite

import (
	"context"
	"errors"
	"fmt"
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
)

// op is one queued write. Events and messages are async (no done
// channel); the others have a caller waiting on done.
type op struct {
	kind opKind
	sid  string
	pk   int64 // events, messages: the session's pk
	at   int64 // enqueue time, Unix ns
	evs  []encEvent
	msgs []encMessage
	args []any // create: the session's column values after id and parent_id
	pid  string
	fn   func(*session.Session)
	done chan result

	res     result
	newPK   int64     // create: the pk given to the session
	deleted []string  // delete: the ids removed
	delPKs  []int64   // delete: their pks
	dead    []string  // claim: the dead stores whose claims were in the way
	taken   []adopted // claim: the sessions taken over from them
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
// Writes are committed by whoever holds the writer's turn (Store.writing):
// a caller of a synchronous write that finds no commit under way takes the
// turn and commits the queue (its own op last) on its own goroutine, so
// that a write on an idle store costs one transaction and no goroutine
// switch; callers that arrive meanwhile queue, and the writer goroutine
// (run) commits what they queued in one transaction as soon as the turn is
// free. The writer goroutine also commits the asynchronous appends, after
// at most Options.Linger. Ops are taken from the queue in order and one
// batch at a time, so they commit in the order they were queued.

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

// release gives the writer's turn back after a commit of batch by a caller,
// waking the writer goroutine when ops wait (or when batch held the stop
// op, which the writer goroutine must see to exit).
func (s *Store) release(stopped bool) {
	s.mu.Lock()
	s.writing = false
	if stopped {
		s.stopped = true
	}
	more := len(s.queue) > 0 || stopped
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
	for {
		<-s.wake
		s.mu.Lock()
		if s.stopped {
			s.mu.Unlock()
			return
		}
		if len(s.queue) == 0 || s.writing {
			s.mu.Unlock() // the caller that holds the turn wakes us after
			continue
		}
		urgent := s.syncOps || s.queued >= s.opts.BatchSize
		s.mu.Unlock()
		if !urgent && s.opts.Linger > 0 {
			t := time.NewTimer(s.opts.Linger)
			select {
			case <-s.urgent:
			case <-t.C:
			}
			t.Stop()
		}
		s.mu.Lock()
		if len(s.queue) == 0 || s.writing {
			s.mu.Unlock()
			signal(s.wake) // look again: a stop may have come meanwhile
			continue
		}
		batch := s.take()
		s.mu.Unlock()
		stop := s.process(batch)
		s.release(stop)
		if stop {
			return
		}
	}
}

// process commits batch in chunks of at most BatchSize writes and reports
// whether it held the stop op.
func (s *Store) process(batch []*op) (stop bool) {
	start, items := 0, 0
	for i, o := range batch {
		n := o.items()
		if items > 0 && items+n > s.opts.BatchSize {
			s.commit(batch[start:i])
			start, items = i, 0
		}
		items += n
		if o.kind == opStop {
			stop = true
		}
	}
	s.commit(batch[start:])
	return stop
}

// commit applies ops in one transaction, retrying a failed commit, then
// answers the callers.
func (s *Store) commit(ops []*op) {
	writes := false
	for _, o := range ops {
		if o.kind != opBarrier && o.kind != opStop {
			writes = true
			break
		}
	}
	var err error
	if writes {
		for attempt := 0; ; attempt++ {
			if err = s.try(ops); err == nil {
				break
			}
			clear(s.seqs) // the cached sequence numbers may be ahead of the database
			if attempt == 4 {
				break
			}
			time.Sleep(time.Duration(10<<attempt) * time.Millisecond)
		}
	}
	if writes && err == nil {
		s.commits.Add(1)
	}
	lost := 0
	s.mu.Lock()
	if err != nil && s.werr == nil {
		s.werr = fmt.Errorf("sqlite: commit: %w", err)
	}
	for _, o := range ops {
		if err != nil && o.kind != opBarrier && o.kind != opStop {
			o.res = result{err: fmt.Errorf("sqlite: commit: %w", err)}
			if o.done == nil {
				lost += o.items()
			}
		}
		switch o.kind {
		case opEvents, opMessages:
			s.pending--
		case opCreate:
			if err == nil && o.res.err == nil {
				s.remember(o.sid, o.newPK)
			}
		case opDelete:
			if err == nil && o.res.err == nil {
				for _, id := range o.deleted {
					delete(s.pks, id)
				}
				for _, pk := range o.delPKs {
					delete(s.seqs, pk)
				}
				s.deleteGen++
			}
		}
	}
	s.mu.Unlock()
	if lost > 0 {
		s.log.Error("session store: writes could not be committed", "db", s.path, "writes", lost, "err", err)
	}
	for _, o := range ops {
		if o.done != nil {
			o.done <- o.res
		}
	}
}

// try runs ops in one transaction. The error is that of the transaction;
// an op's own failure (a missing session, for example) is in its res.
func (s *Store) try(ops []*op) error {
	ctx := context.Background()
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	st := s.stmts.in(ctx, tx)
	s.rows = s.rows[:0]
	for _, o := range ops {
		o.res, o.newPK, o.deleted, o.delPKs, o.dead, o.taken = result{}, 0, nil, nil, nil, nil
		if o.kind != opEvents {
			// Everything before o is written before o.
			if err := s.insertRows(ctx, st); err != nil {
				tx.Rollback()
				return err
			}
		}
		if err := s.apply(ctx, tx, st, o); err != nil {
			tx.Rollback()
			return err
		}
	}
	if err := s.insertRows(ctx, st); err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
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
