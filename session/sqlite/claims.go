// Claims: the sessions that runs hold (session.Store.Claim), in the claims
// table, so that every process on the database sees them.

package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/agentpool/agentpool/session"
)

// lineageClaims selects the claims on a session (?1), on its ancestors and
// on its descendants, with the store that holds each (NULL columns when
// that store has no row any more).
const lineageClaims = `WITH RECURSIVE
	up(id, parent_id) AS (
		SELECT id, parent_id FROM sessions WHERE id = ?1
		UNION ALL SELECT s.id, s.parent_id FROM sessions s JOIN up ON s.id = up.parent_id),
	down(id) AS (
		SELECT id FROM sessions WHERE parent_id = ?1
		UNION ALL SELECT s.id FROM sessions s JOIN down ON s.parent_id = down.id)
SELECT c.session_id, c.instance, c.claimed_at, i.pid, i.host, i.boot_id, i.heartbeat_at
FROM claims c LEFT JOIN instances i ON i.id = c.instance
WHERE c.session_id = ?1 OR c.session_id IN (SELECT id FROM up) OR c.session_id IN (SELECT id FROM down)`

// ownClaim selects the claim on a session (?1), as lineageClaims does.
const ownClaim = `SELECT c.session_id, c.instance, c.claimed_at, i.pid, i.host, i.boot_id, i.heartbeat_at
FROM claims c LEFT JOIN instances i ON i.id = c.instance WHERE c.session_id = ?1`

// Claim implements session.Store. The writer looks at the claims on the
// session's line and adds this store's in one transaction (which holds the
// database's write lock), in queue order with the other writes. A claim
// in the way whose store is dead does not count: that store's running
// sessions are taken over in the same transaction, and closed
// (session.CloseInterrupted) before Claim returns.
func (s *Store) Claim(ctx context.Context, sessionID string) error {
	o := &op{kind: opClaim, sid: sessionID}
	if err := s.call(ctx, o); err != nil {
		return err
	}
	s.dropLocks(o.dead)
	if len(o.taken) > 0 {
		waiting := s.closeAdopted(ctx, o.taken)
		logAdopted(s.log, s.path, len(o.taken), len(waiting))
	}
	return nil
}

// applyClaim is the writer's part of Claim. A live claim in the way is the
// op's error; the transaction goes on.
func (s *Store) applyClaim(ctx context.Context, st *txStatements, o *op) error {
	// A session that does not exist has no line yet (a child needs its
	// parent to exist): only a claim on its id can be in the way, which a
	// point read finds; the recursive lineage query costs several times
	// more.
	if err := s.dropReleased(ctx, st); err != nil {
		return err
	}
	if err := s.writeClaims(ctx, st); err != nil {
		return err
	}
	q := st.lineage
	var pk int64
	switch err := st.get(st.sessionPK).QueryRowContext(ctx, o.sid).Scan(&pk); {
	case errors.Is(err, sql.ErrNoRows):
		q = st.ownClaim
	case err != nil:
		return err
	}
	rows, err := st.get(q).QueryContext(ctx, o.sid)
	if err != nil {
		return err
	}
	var (
		dead  []string
		stale bool
	)
	for rows.Next() {
		var (
			held, inst     string
			since          int64
			pid, heartbeat sql.NullInt64
			host, boot     sql.NullString
		)
		if err := rows.Scan(&held, &inst, &since, &pid, &host, &boot, &heartbeat); err != nil {
			rows.Close()
			return err
		}
		if !pid.Valid {
			stale = true // its store closed, or was taken for dead
			continue
		}
		in := instance{id: inst, pid: int(pid.Int64), host: host.String, boot: boot.String, heartbeat: heartbeat.Int64}
		if s.alive(in) {
			rows.Close()
			o.res.err = &session.RunningError{SessionID: o.sid, Claimed: held, Owner: session.Owner{
				Instance: in.id, PID: in.pid, Host: in.host, Since: time.Unix(0, since),
			}}
			return nil
		}
		dead = append(dead, in.id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	if len(dead) > 0 || stale {
		s.forget(nil) // sessions change owner and status
		if o.taken, err = s.takeOver(ctx, st.tx, dead); err != nil {
			return err
		}
		o.dead = dead
	}
	// The claim's row is written when the transaction commits, unless a
	// Release comes first (a run within one transaction writes none):
	// until then the transaction's write lock keeps other stores from
	// claiming, and this store's claims see it (writeClaims, above).
	s.txClaims[o.sid] = time.Now().UnixNano()
	return nil
}

// writeClaims inserts the rows of the claims taken in the open
// transaction: before the transaction commits, and before a claim check
// reads the claims.
func (s *Store) writeClaims(ctx context.Context, st *txStatements) error {
	for id, at := range s.txClaims {
		if _, err := st.get(st.insClaim).ExecContext(ctx, id, s.instance, at); err != nil {
			return err
		}
		delete(s.txClaims, id)
	}
	return nil
}

// Release implements session.Store. The claim is deleted by the writer, in
// queue order: in the same transaction as the run's last writes or after
// them, so that the next owner reads them.
//
// A release whose commit fails still ends the claim: the session goes to
// s.unreleased, whose rows this store's claims delete before they look
// (applyClaim) and every later commit deletes (dropReleased), so that a
// run whose writes failed does not keep its session claimed for as long
// as the process lives.
func (s *Store) Release(ctx context.Context, sessionID string) error {
	return s.call(ctx, &op{kind: opRelease, sid: sessionID, lost: session.WritesOf(ctx)})
}

// dropReleased deletes, in the open transaction, the claim rows of the
// releases whose commit failed (s.unreleased) that it has not deleted yet;
// they leave s.unreleased when it commits (commitTx).
func (s *Store) dropReleased(ctx context.Context, st *txStatements) error {
	for id := range s.unreleased {
		if _, done := s.txReleased[id]; done {
			continue
		}
		if _, err := st.get(st.delClaim).ExecContext(ctx, id, s.instance); err != nil {
			return err
		}
		s.txReleased[id] = struct{}{}
	}
	return nil
}
