// Owners and claims: which open store runs which sessions, across
// processes and machines.

package postgres

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"os"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentpool/agentpool/session"
)

// lockClass is the first key of the two-key advisory locks of this
// package ("APL\0"); the second is an open store's lock_key. Advisory
// locks are database-wide, so stores of every schema of the database
// share one key space, and a store's key is unique among the live ones
// because it could take the lock.
const lockClass int32 = 0x41504C00

// owner is the dedicated connection on which an open store holds its
// session-level advisory lock (lockClass, key). The server releases the
// lock when the connection ends, whatever ends it (Close, the process
// dying, the machine or the network going away, pg_terminate_backend):
// from then on the store's claims no longer count.
type owner struct {
	mu   sync.Mutex
	conn *pgx.Conn
	key  int32
}

func (o *owner) close() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.conn != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		o.conn.Close(ctx) // ends the session: the lock goes with it
		o.conn = nil
	}
}

// watchOwner checks the owner connection every interval until the store
// closes. When it was lost (the network, a server restart, an operator),
// this store's claims stopped counting and another store may have taken
// some over: that is logged as an error, and the connection is made
// again, with the same lock key when it is still free (the claims no
// other store took count again), else a new one.
func (s *Store) watchOwner(interval time.Duration) {
	defer close(s.ownerDone)
	// Ending a call by its context closes a pgx connection: a ping must
	// not give up before the server could answer on a busy machine, or
	// it would drop the lock itself. Close cancels what is under way.
	base, stop := context.WithCancel(context.Background())
	defer stop()
	go func() {
		<-s.done
		stop()
	}()
	limit := s.connCfg.ConnectTimeout + 10*time.Second
	t := time.NewTicker(interval)
	defer t.Stop()
	lost := false
	for {
		select {
		case <-base.Done():
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(base, limit)
		err := s.own.check(ctx)
		if err != nil && base.Err() == nil {
			if !lost {
				lost = true
				s.log.Error("session store: lost the connection that holds this process's claims; other processes may take them over until it is back",
					"db", s.url, "err", redact(err, s.password))
			}
			if err = s.reown(ctx); err == nil {
				lost = false
				s.log.Warn("session store: the connection that holds this process's claims is back", "db", s.url)
			}
		}
		cancel()
	}
}

// check pings the owner connection.
func (o *owner) check(ctx context.Context) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.conn == nil {
		return errors.New("no owner connection")
	}
	return o.conn.Ping(ctx)
}

// reown connects a new owner connection and takes the store's lock key
// again, or a new one (recorded in instances) when another store holds it.
func (s *Store) reown(ctx context.Context) error {
	conn, err := pgx.ConnectConfig(ctx, s.connCfg.Copy())
	if err != nil {
		return err
	}
	o := s.own
	o.mu.Lock()
	defer o.mu.Unlock()
	key, got := o.key, false
	for range 100 {
		if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1, $2)`, lockClass, key).Scan(&got); err != nil {
			conn.Close(context.Background())
			return err
		}
		if got {
			break
		}
		key = randomKey()
	}
	if !got {
		conn.Close(context.Background())
		return errors.New("no free advisory lock key for this store")
	}
	if key != o.key {
		if _, err := s.pool.Exec(ctx, `UPDATE instances SET lock_key = $2 WHERE id = $1`, s.instance, key); err != nil {
			conn.Close(context.Background())
			return err
		}
	}
	// A store that took this one for dead dropped its row: write it again.
	if _, err := s.pool.Exec(ctx, `INSERT INTO instances (id, lock_key, pid, host, started_at) VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (id) DO NOTHING`, s.instance, key, os.Getpid(), s.host, time.Now().UnixNano()); err != nil {
		conn.Close(context.Background())
		return err
	}
	if o.conn != nil {
		o.conn.Close(context.Background())
	}
	o.conn, o.key = conn, key
	return nil
}

// backendPID is the server process of the owner connection (tests end it).
func (o *owner) backendPID() uint32 {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.conn.PgConn().PID()
}

func randomKey() int32 {
	var b [4]byte
	rand.Read(b[:])
	return int32(binary.BigEndian.Uint32(b[:])&0x7fffffff) | 1 // > 0
}

// register connects the owner connection, takes a free advisory lock
// key, and records the store in instances. Rows of dead stores that had
// the same key are dropped first (their lock is free, so they are dead).
func (s *Store) register(ctx context.Context) (*owner, error) {
	conn, err := pgx.ConnectConfig(ctx, s.connCfg.Copy())
	if err != nil {
		return nil, err
	}
	o := &owner{conn: conn}
	for range 100 {
		key := randomKey()
		var ok bool
		if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1, $2)`, lockClass, key).Scan(&ok); err != nil {
			o.close()
			return nil, err
		}
		if ok {
			o.key = key
			break
		}
	}
	if o.key == 0 {
		o.close()
		return nil, errors.New("no free advisory lock key for this store")
	}
	_, err = s.pool.Exec(ctx, `WITH gone AS (DELETE FROM instances WHERE lock_key = $2 RETURNING id),
			dropped AS (DELETE FROM claims WHERE instance IN (SELECT id FROM gone))
		INSERT INTO instances (id, lock_key, pid, host, started_at) VALUES ($1, $2, $3, $4, $5)`,
		s.instance, o.key, os.Getpid(), s.host, time.Now().UnixNano())
	if err != nil {
		o.close()
		return nil, err
	}
	return o, nil
}

// lineageClaims selects the claims on a session ($1), on its ancestors
// and on its descendants, with the store that holds each (NULL columns
// when that store has no row any more) and whether that store's advisory
// lock is held, which is what makes it alive.
const lineageClaims = `WITH RECURSIVE
	up(id, parent_id) AS (
		SELECT id, parent_id FROM sessions WHERE id = $1
		UNION ALL SELECT s.id, s.parent_id FROM sessions s JOIN up ON s.id = up.parent_id),
	down(id) AS (
		SELECT id FROM sessions WHERE parent_id = $1
		UNION ALL SELECT s.id FROM sessions s JOIN down ON s.parent_id = down.id)
SELECT c.session_id, c.instance, c.claimed_at, i.pid, i.host,
	i.lock_key IS NOT NULL AND EXISTS (SELECT 1 FROM pg_locks l
		WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 2
		AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
		AND l.classid = $2::int4::oid AND l.objid = i.lock_key::oid)
FROM claims c LEFT JOIN instances i ON i.id = c.instance
WHERE c.session_id = $1 OR c.session_id IN (SELECT id FROM up) OR c.session_id IN (SELECT id FROM down)`

// Claim implements session.Store. One transaction locks the claims table
// against other claims (SHARE ROW EXCLUSIVE: claimants from every process
// take turns; readers do not wait), looks at the claims on the session's
// line and adds this store's. A claim whose store's advisory lock is free
// does not count: its store is gone, and its claims and row are dropped.
//
// Unlike the SQLite store, Claim does not close (session.CloseInterrupted)
// what a dead store's run left running: on a database several machines
// share, another machine may be carrying that run on.
func (s *Store) Claim(ctx context.Context, sessionID string) error {
	if s.isClosed() {
		return session.ErrClosed
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return s.wrap(err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	if _, err := tx.Exec(ctx, `LOCK TABLE claims IN SHARE ROW EXCLUSIVE MODE`); err != nil {
		return s.wrap(err)
	}
	released, err := s.dropReleased(ctx, tx)
	if err != nil {
		return s.wrap(err)
	}
	rows, err := tx.Query(ctx, lineageClaims, sessionID, lockClass)
	if err != nil {
		return s.wrap(err)
	}
	var dead []string
	for rows.Next() {
		var (
			held, inst string
			since      int64
			pid        *int32
			host       *string
			alive      bool
		)
		if err := rows.Scan(&held, &inst, &since, &pid, &host, &alive); err != nil {
			rows.Close()
			return s.wrap(err)
		}
		if !alive {
			dead = append(dead, inst)
			continue
		}
		rows.Close()
		return &session.RunningError{SessionID: sessionID, Claimed: held, Owner: session.Owner{
			Instance: inst, PID: int(*pid), Host: *host, Since: time.Unix(0, since),
		}}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return s.wrap(err)
	}
	if len(dead) > 0 {
		if _, err := tx.Exec(ctx, `DELETE FROM claims WHERE instance = ANY($1::text[])`, dead); err != nil {
			return s.wrap(err)
		}
		if _, err := tx.Exec(ctx, `DELETE FROM instances WHERE id = ANY($1::text[])`, dead); err != nil {
			return s.wrap(err)
		}
		s.log.Warn("session store: claims of a store that is gone taken over", "db", s.url, "session", sessionID)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO claims (session_id, instance, claimed_at) VALUES ($1, $2, $3)
		ON CONFLICT (session_id) DO UPDATE SET instance = excluded.instance, claimed_at = excluded.claimed_at`,
		sessionID, s.instance, time.Now().UnixNano()); err != nil {
		return s.wrap(err)
	}
	if err := tx.Commit(ctx); err != nil {
		return s.wrap(err)
	}
	s.mu.Lock()
	for _, id := range released {
		delete(s.unreleased, id)
	}
	s.mu.Unlock()
	return nil
}

// Release implements session.Store. Every write was committed before its
// call returned, so the next owner sees the run's writes. A release that
// fails still ends the claim: the session goes to s.unreleased, whose
// rows this store's next Claim deletes before it looks (and Close with
// the store's other claims), so that a run whose writes failed does not
// keep its session claimed for as long as the store is open.
func (s *Store) Release(ctx context.Context, sessionID string) (err error) {
	defer s.account(ctx, 1, &err)
	if s.isClosed() {
		return session.ErrClosed
	}
	_, err = s.pool.Exec(ctx, `DELETE FROM claims WHERE session_id = $1 AND instance = $2`, sessionID, s.instance)
	if err != nil {
		s.mu.Lock()
		s.unreleased[sessionID] = struct{}{}
		s.mu.Unlock()
	}
	return s.wrap(err)
}

// dropReleased deletes in tx the claim rows of the releases that failed
// (s.unreleased) and returns their sessions, which leave s.unreleased once
// tx commits.
func (s *Store) dropReleased(ctx context.Context, tx pgx.Tx) ([]string, error) {
	s.mu.Lock()
	ids := make([]string, 0, len(s.unreleased))
	for id := range s.unreleased {
		ids = append(ids, id)
	}
	s.mu.Unlock()
	if len(ids) == 0 {
		return nil, nil
	}
	_, err := tx.Exec(ctx, `DELETE FROM claims WHERE instance = $1 AND session_id = ANY($2::text[])`, s.instance, ids)
	return ids, err
}
