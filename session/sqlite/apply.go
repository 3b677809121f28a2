// How the writer applies one op inside a transaction, and the batched row inserts.

package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	sqlite3 "modernc.org/sqlite/lib"

	"github.com/agentpool/agentpool/session"
)

func (s *Store) apply(ctx context.Context, tx *sql.Tx, st *txStatements, o *op) error {
	switch o.kind {
	case opEvents:
		if pk, ok := s.txCreated[o.sid]; ok {
			o.pk = pk // created in this transaction: replayed, it may have another key
		}
		last, ok := s.seqs[o.pk]
		if !ok {
			if err := st.get(st.maxSeq).QueryRowContext(ctx, o.pk).Scan(&last); err != nil {
				return err
			}
		}
		for _, e := range o.evs {
			last++
			s.rows = append(s.rows, eventRow{pk: o.pk, seq: last, at: o.at, kind: e.kind, data: e.data})
		}
		s.seqs[o.pk] = last
	case opMessages:
		if pk, ok := s.txCreated[o.sid]; ok {
			o.pk = pk
		}
		for i := range o.msgs {
			s.mrows = append(s.mrows, msgRow{pk: o.pk, sid: o.sid, m: &o.msgs[i]})
		}
	case opCreate:
		// One statement: the constraints say whether the id is taken
		// (UNIQUE) or the parent missing (FOREIGN KEY); a failed statement
		// leaves the transaction as it was.
		args := append([]any{o.sid, nullable(o.pid)}, o.args...)
		args = append(args, s.instance)
		res, err := st.get(st.insSession).ExecContext(ctx, args...)
		switch {
		case isConstraint(err, sqlite3.SQLITE_CONSTRAINT_UNIQUE):
			o.res.err = fmt.Errorf("%w: %s", session.ErrExists, o.sid)
			return nil
		case o.pid != "" && isForeignKey(err):
			o.res.err = notFound(o.pid)
			return nil
		case err != nil:
			return err
		}
		if o.newPK, err = res.LastInsertId(); err != nil {
			return err
		}
		// Known at once: appends to it queue from now on, and land after
		// it in this transaction or a later one.
		s.txCreated[o.sid] = o.newPK
		s.seqs[o.newPK] = 0 // a new log: no read of its last seq
		s.mu.Lock()
		s.remember(o.sid, o.newPK)
		s.mu.Unlock()
		if o.rec != nil {
			s.keep(*o.rec)
		}
		return nil
	case opUpdate:
		if o.upd != nil {
			return s.update(ctx, st, o)
		}
		s.mu.Lock()
		cur, ok := s.recs[o.sid]
		s.mu.Unlock()
		if !ok {
			var err error
			cur, err = scanSession(st.get(st.getSession).QueryRowContext(ctx, o.sid))
			if errors.Is(err, sql.ErrNoRows) {
				o.res.err = notFound(o.sid)
				return nil
			}
			if err != nil {
				return err
			}
		}
		next := cur
		next.Metadata = session.CloneMetadata(cur.Metadata)
		if r := runUpdate(o.fn, &next); r.panicked {
			o.res = r
			return nil
		}
		next.ID, next.ParentID, next.Depth, next.CreatedAt = cur.ID, cur.ParentID, cur.Depth, cur.CreatedAt
		next.UpdatedAt = time.Now()
		if !next.UpdatedAt.After(cur.UpdatedAt) {
			next.UpdatedAt = cur.UpdatedAt.Add(time.Nanosecond)
		}
		args, err := sessionArgs(next)
		if err != nil {
			o.res.err = fmt.Errorf("sqlite: session %s: %w", o.sid, err)
			return nil
		}
		// created_at never changes: leaving it out of the SET spares the
		// rewrite of its index entry (a page written per update).
		args = append(args[:6:6], args[7:]...)
		o.rec = stored(next, args[len(args)-1])
		args = append(args, s.instance, o.sid)
		o.upd = args
		return s.update(ctx, st, o)
	case opClaim:
		return s.applyClaim(ctx, st, o)
	case opRelease:
		if _, ok := s.txClaims[o.sid]; ok {
			delete(s.txClaims, o.sid) // claimed in this transaction: no row yet
			return nil
		}
		_, err := st.get(st.delClaim).ExecContext(ctx, o.sid, s.instance)
		return err
	case opDelete:
		rows, err := tx.QueryContext(ctx, `WITH RECURSIVE sub(id, pk) AS (
				SELECT id, pk FROM sessions WHERE id = ?
				UNION ALL SELECT s.id, s.pk FROM sessions s JOIN sub ON s.parent_id = sub.id)
			SELECT id, pk FROM sub`, o.sid)
		if err != nil {
			return err
		}
		var (
			ids []string
			pks []int64
		)
		for rows.Next() {
			var id string
			var pk int64
			if err := rows.Scan(&id, &pk); err != nil {
				rows.Close()
				return err
			}
			ids = append(ids, id)
			pks = append(pks, pk)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		if len(ids) == 0 {
			o.res.err = notFound(o.sid)
			return nil
		}
		if _, err := st.get(st.delSession).ExecContext(ctx, o.sid); err != nil {
			return err
		}
		o.deleted, o.delPKs = ids, pks
		s.forget(ids)
	}
	return nil
}

// update writes the record an update computed, and caches it.
func (s *Store) update(ctx context.Context, st *txStatements, o *op) error {
	if _, err := st.get(st.updSession).ExecContext(ctx, o.upd...); err != nil {
		return err
	}
	if o.rec != nil {
		s.keep(*o.rec)
	} else {
		s.forget([]string{o.sid})
	}
	return nil
}

// insertRows writes the buffered event rows in order, with multi-row
// inserts, then the buffered messages (rows.go). A row whose session was
// deleted after the append was accepted is dropped (with a warning); any
// other failure fails the transaction.
func (s *Store) insertRows(ctx context.Context, st *txStatements) error {
	rows := s.rows
	s.rows = s.rows[:0]
	for len(rows) > 0 {
		n := 1
		for _, size := range multiRow {
			if len(rows) >= size {
				n = size
				break
			}
		}
		chunk := rows[:n]
		rows = rows[n:]
		args := s.args[:0]
		for _, r := range chunk {
			args = append(args, r.pk, r.seq, r.at, r.kind, r.data)
		}
		s.args = args
		_, err := st.get(st.insEvents[n]).ExecContext(ctx, args...)
		if err == nil {
			continue
		}
		if !isForeignKey(err) {
			return err
		}
		// Find the rows of deleted sessions one by one.
		for _, r := range chunk {
			if _, err := st.get(st.insEvents[1]).ExecContext(ctx, r.pk, r.seq, r.at, r.kind, r.data); err != nil {
				if !isForeignKey(err) {
					return err
				}
				s.log.Warn("session store: event of a deleted session dropped", "session_pk", r.pk, "seq", r.seq)
			}
		}
	}
	clear(s.args) // drop references to the event data
	return s.insertMessages(ctx, st)
}
