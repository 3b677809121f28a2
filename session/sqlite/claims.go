// Claims: the sessions that runs hold (session.Store.Claim), in the claims
// table, so that every process on the database sees them.

package sqlite

import (
	"context"
	"database/sql"
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

// Claim implements session.Store. One transaction (which holds the
// database's write lock) looks at the claims on the session's line and
// adds this store's. A claim in the way whose store is dead does not
// count: that store's running sessions are taken over, and closed
// (session.CloseInterrupted) before Claim returns.
func (s *Store) Claim(ctx context.Context, sessionID string) error {
	if s.isClosed() {
		return session.ErrClosed
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	rows, err := tx.QueryContext(ctx, lineageClaims, sessionID)
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
			return &session.RunningError{SessionID: sessionID, Claimed: held, Owner: session.Owner{
				Instance: in.id, PID: in.pid, Host: in.host, Since: time.Unix(0, since),
			}}
		}
		dead = append(dead, in.id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	var taken []adopted
	if len(dead) > 0 || stale {
		if taken, err = s.takeOver(ctx, tx, dead); err != nil {
			return err
		}
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO claims (session_id, instance, claimed_at) VALUES (?, ?, ?)
		ON CONFLICT (session_id) DO UPDATE SET instance = excluded.instance, claimed_at = excluded.claimed_at`,
		sessionID, s.instance, time.Now().UnixNano()); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	s.dropLocks(dead)
	if len(taken) > 0 {
		s.log.Warn("session store: sessions of a process that is gone taken over and marked interrupted", "db", s.path, "sessions", len(taken))
		s.closeAdopted(ctx, taken)
	}
	return nil
}

// Release implements session.Store: the run's writes are committed first
// (a barrier through the writer), then the claim is deleted.
func (s *Store) Release(ctx context.Context, sessionID string) error {
	if err := s.barrier(ctx); err != nil {
		return err
	}
	_, err := s.db.ExecContext(ctx, `DELETE FROM claims WHERE session_id = ? AND instance = ?`, sessionID, s.instance)
	if err != nil && s.isClosed() {
		return session.ErrClosed
	}
	return err
}
