// The open transaction: the holder of the writer's turn applies ops in it
// as they come and commits it when one of them needs its commit.

package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/agentpool/agentpool/session"
)

// process applies batch, in order, in the open transaction (beginning one
// when needed). It commits whenever BatchSize writes are in the
// transaction, and at the end when flush is set, when an op of batch needs
// its commit (its caller waits for durability), or when the transaction is
// older than Linger; otherwise the transaction stays open (the writer
// goroutine commits it in time) and the deferred writes and reads of
// batch are answered at once. It reports whether batch held the stop op.
func (s *Store) process(batch []*op, flush bool) (stop bool) {
	durable := flush || s.opts.Linger < 0
	for _, o := range batch {
		if s.txItems > 0 && s.txItems+o.items() > s.opts.BatchSize {
			s.commitTx()
		}
		if o.kind == opStop {
			stop = true
		}
		if o.needsCommit() {
			durable = true
		}
		s.exec(o)
		if s.txErr != nil {
			// Retry now: a deferred write must not be answered before it
			// is applied.
			s.commitTx()
		}
	}
	// Buffered rows stay buffered while the transaction stays open: they
	// are written before it commits (or before a delete or a claim), in
	// as few statements as they fill.
	if durable || s.txErr != nil || s.txItems >= s.opts.BatchSize || (s.tx != nil && time.Since(s.txStart) >= s.opts.Linger) {
		s.commitTx()
	} else {
		s.answerApplied()
	}
	return stop
}

// exec applies o in the open transaction, after what was applied before.
// An error is kept in s.txErr: the transaction is then replayed whole.
func (s *Store) exec(o *op) {
	s.txOps = append(s.txOps, o)
	s.txItems += o.items()
	if o.kind == opBarrier || o.kind == opStop || s.txErr != nil {
		return
	}
	if o.kind != opRelease && o.lost.Failed() {
		// Its run lost a write: what follows a hole is not stored.
		o.refused = true
		o.res.err = session.ErrEarlierWriteLost
		o.lost.Lost(o.items(), session.ErrEarlierWriteLost)
		return
	}
	ctx := context.Background()
	if o.kind == opGet && s.tx == nil {
		// Nothing uncommitted: any connection reads the same.
		s.read(ctx, s.stmts.getSession, o)
		return
	}
	if s.tx == nil {
		if s.txErr = s.begin(ctx); s.txErr != nil {
			return
		}
	}
	s.txErr = s.applyIn(ctx, o)
}

// begin opens the transaction that the next ops are applied in.
func (s *Store) begin(ctx context.Context) error {
	var (
		tx  *sql.Tx
		err error
	)
	if s.wconn != nil {
		tx, err = s.wconn.BeginTx(ctx, nil)
	} else {
		tx, err = s.db.BeginTx(ctx, nil)
	}
	if err != nil {
		return err
	}
	s.tx, s.txSt = tx, s.stmts.in(ctx, tx)
	s.rows, s.mrows = s.rows[:0], s.mrows[:0]
	clear(s.txCreated)
	clear(s.txClaims)
	clear(s.txReleased)
	if s.wconn != nil {
		// Before the transaction counts as open (cachedRecord): drop the
		// cache if another connection committed since the last one.
		var v int64
		if err := s.txSt.get(s.stmts.dataVersion).QueryRowContext(ctx).Scan(&v); err != nil {
			tx.Rollback()
			s.tx, s.txSt = nil, nil
			return err
		}
		if v != s.dataVer {
			s.forget(nil)
			s.dataVer = v
		}
	}
	s.mu.Lock()
	s.txOpen, s.txStart = true, time.Now()
	s.mu.Unlock()
	return nil
}

// applyIn applies o in s.tx. The event rows buffered before a delete or a
// claim are written before it (a delete must find them, a claim's
// take-over may close their sessions); the other ops neither read events
// nor are read by them (an event's session is created before the event is
// queued), so that the rows of many ops go in one multi-row insert, still
// in queue order.
func (s *Store) applyIn(ctx context.Context, o *op) error {
	if o.kind == opDelete || o.kind == opClaim {
		if err := s.insertRows(ctx, s.txSt); err != nil {
			return err
		}
	}
	if o.kind == opGet {
		s.read(ctx, s.txSt.get(s.stmts.getSession), o)
		if o.res.err == nil {
			s.keep(*o.rec)
		}
		return nil
	}
	return s.apply(ctx, s.tx, s.txSt, o)
}

// answerApplied answers the ops of the open transaction that wait only for
// their apply (deferred writes, reads).
func (s *Store) answerApplied() {
	for _, o := range s.txOps {
		if o.done != nil && !o.answered {
			o.answered = true
			o.done <- o.res
		}
	}
	if s.tx == nil {
		s.txOps, s.txItems = s.txOps[:0], 0
	}
}

// commitTx commits the open transaction, replaying it whole (a failed
// commit or statement rolls it all back) up to four more times, then
// answers its ops.
func (s *Store) commitTx() {
	err := s.txErr
	writes := s.tx != nil
	if s.tx != nil {
		if err == nil {
			err = s.insertRows(context.Background(), s.txSt)
		}
		if err == nil {
			err = s.dropReleased(context.Background(), s.txSt)
		}
		if err == nil {
			err = s.writeClaims(context.Background(), s.txSt)
		}
		if err == nil {
			err = s.tx.Commit()
		} else {
			s.tx.Rollback()
		}
		s.tx, s.txSt = nil, nil
		if err != nil {
			s.forget(nil) // it cached what was rolled back
		}
	}
	for attempt := 0; err != nil && attempt < 4; attempt++ {
		clear(s.seqs) // the cached sequence numbers may be ahead of the database
		time.Sleep(time.Duration(10<<attempt) * time.Millisecond)
		writes = true
		err = s.replay()
	}
	if writes && err == nil {
		s.commits.Add(1)
		if f := s.opts.CommitLatency; f != nil {
			now := time.Now().UnixNano()
			for _, o := range s.txOps {
				if o.kind == opEvents && !o.refused && o.res.err == nil {
					f(time.Duration(now - o.at))
				}
			}
		}
		for id := range s.txReleased {
			delete(s.unreleased, id)
		}
	}
	if err != nil {
		s.forget(nil)
	}
	s.finish(err)
	clear(s.txOps)
	s.txOps, s.txItems, s.txErr = s.txOps[:0], 0, nil
}

// replay applies the transaction's ops again in a new transaction and
// commits it. A write whose caller was answered keeps what it was applied
// with (an update does not run its fn again).
func (s *Store) replay() error {
	ctx := context.Background()
	if err := s.begin(ctx); err != nil {
		return err
	}
	err := func() error {
		for _, o := range s.txOps {
			if !o.isWrite() || o.refused {
				continue
			}
			if !o.answered && o.opSync != nil {
				// Its caller waits for the outcome of this attempt; an
				// update runs fn again on what the database holds now.
				o.res, *o.opSync = result{}, opSync{args: o.args, pid: o.pid, fn: o.fn}
			}
			prior := o.res.err
			if err := s.applyIn(ctx, o); err != nil {
				return err
			}
			if o.answered && prior == nil && o.res.err != nil {
				// Its caller went on: say so (a claim another process took
				// while the transaction was rolled back, for example).
				s.log.Error("session store: a write answered before its commit failed when its transaction was replayed",
					"db", s.path, "session", o.sid, "err", o.res.err)
				o.lost.Lost(o.items(), s.failure(o.res.err))
			}
		}
		if err := s.insertRows(ctx, s.txSt); err != nil {
			return err
		}
		if err := s.dropReleased(ctx, s.txSt); err != nil {
			return err
		}
		return s.writeClaims(ctx, s.txSt)
	}()
	if err == nil {
		err = s.tx.Commit()
	} else {
		s.tx.Rollback()
	}
	s.tx, s.txSt = nil, nil
	return err
}

// finish records the outcome of the transaction's ops and answers the
// callers not answered yet. A failed transaction loses its writes: the
// first error is kept for Flush, the loss of writes whose callers were
// answered is logged, every lost write is counted in its run's account
// (session.RunWrites) before any caller is answered, a lost release
// still ends its claim (s.unreleased), and appends queued for sessions
// it had created are dropped (their keys were never committed).
func (s *Store) finish(err error) {
	lost := 0
	var gone map[int64]bool
	s.mu.Lock()
	if err != nil && s.werr == nil {
		s.werr = fmt.Errorf("sqlite: commit: %w", err)
	}
	var cause error
	if err != nil {
		cause = s.failure(err)
	}
	for _, o := range s.txOps {
		if err != nil && o.isWrite() && !o.refused {
			if o.res.err == nil && !o.res.panicked {
				// Applied, not committed (not an op the transaction
				// refused for the state of its sessions).
				o.lost.Lost(o.items(), cause)
			}
			if o.done == nil || o.answered {
				lost += o.items()
			} else {
				o.res = result{err: fmt.Errorf("sqlite: commit: %w", err)}
			}
			if o.kind == opRelease {
				s.unreleased[o.sid] = struct{}{}
			}
			if o.kind == opCreate && o.newPK != 0 {
				if s.pks[o.sid] == o.newPK {
					delete(s.pks, o.sid)
				}
				if gone == nil {
					gone = map[int64]bool{}
				}
				gone[o.newPK] = true
			}
		}
		switch o.kind {
		case opEvents, opMessages:
			s.pending--
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
	if gone != nil {
		lost += s.dropQueued(gone, cause)
	}
	s.txOpen = false
	s.mu.Unlock()
	if lost > 0 {
		s.log.Error("session store: writes could not be committed", "db", s.path, "writes", lost, "err", err)
	}
	for _, o := range s.txOps {
		if o.done != nil && !o.answered {
			o.answered = true
			o.done <- o.res
		}
	}
}

// dropQueued removes from the queue the appends to the sessions of pks,
// counts them lost (cause) in their runs' accounts and returns how many
// writes they held; s.mu is held.
func (s *Store) dropQueued(pks map[int64]bool, cause error) int {
	n := 0
	kept := s.queue[:0]
	for _, o := range s.queue {
		if (o.kind == opEvents || o.kind == opMessages) && pks[o.pk] {
			n += o.items()
			o.lost.Lost(o.items(), cause)
			s.queued -= o.items()
			s.pending--
			continue
		}
		kept = append(kept, o)
	}
	clear(s.queue[len(kept):])
	s.queue = kept
	return n
}

// failure is err as a run's account of lost writes keeps it: naming the
// store ("sqlite /path/db: database or disk is full (13)").
func (s *Store) failure(err error) error {
	return fmt.Errorf("sqlite %s: %w", s.path, err)
}

// read reads o's session with p (a statement of any connection, or of the
// open transaction, which sees what it holds uncommitted).
func (s *Store) read(ctx context.Context, p *sql.Stmt, o *op) {
	sess, err := scanSession(p.QueryRowContext(ctx, o.sid))
	if errors.Is(err, sql.ErrNoRows) {
		err = notFound(o.sid)
	}
	o.rec, o.res.err = &sess, err
}
