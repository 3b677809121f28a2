// Ownership: which open store (an instance) runs which sessions, whether
// the process of a store still lives, and what becomes of the sessions of
// one that died.

package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"os"
	"path/filepath"
	"time"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/session"
)

// DefaultLease is Options.Lease when unset.
const DefaultLease = 30 * time.Second

// lockState is what a look at a store's lock file tells.
type lockState uint8

const (
	lockUnknown lockState = iota // no lock file, or no flock here
	lockHeld                     // a live process holds it
	lockFree                     // its process is gone
)

// instance is one row of the instances table: an open store.
type instance struct {
	id, host, boot string
	pid            int
	heartbeat      int64 // Unix ns
}

// adopted is a running session of a dead store, taken over to be closed.
type adopted struct{ id, parent string }

// lockDir is the directory of the lock files of the stores of the
// database at path.
func lockDir(path string) string { return path + ".instances" }

func (s *Store) lockPath(instanceID string) string {
	return filepath.Join(lockDir(s.path), instanceID+".lock")
}

// alive reports whether the store in still runs. Its lock file decides
// when there is one to look at: a held lock means alive; a free one means
// dead when the store ran on this machine (same boot id, or same host
// name), since the kernel releases the lock of a process that dies, so
// neither a reused process id nor a container's pid 1 fools it. A lock
// taken on another machine may not be visible from here (a network file
// system that keeps flocks local), so there a free lock proves nothing.
// Then, and without a lock file to look at (it could not be made, or this
// platform has no flock), a store of this host that ran before the
// machine last booted is dead, and otherwise the lease decides: alive
// while its heartbeat is younger than Options.Lease.
func (s *Store) alive(in instance) bool {
	if in.id == s.instance {
		return true
	}
	if !s.memory {
		switch probeLock(s.lockPath(in.id)) {
		case lockHeld:
			return true
		case lockFree:
			if in.host == s.host || (in.boot != "" && in.boot == s.boot) {
				return false
			}
		}
	}
	if in.host == s.host && in.boot != "" && s.boot != "" && in.boot != s.boot {
		return false
	}
	return time.Since(time.Unix(0, in.heartbeat)) < s.opts.Lease
}

// register takes this store's lock, records the store in instances and
// takes over the running sessions of the stores that are dead (see
// takeOver), which it returns. The lock is taken before the row is
// written, so that whoever sees the row finds the lock held.
func (s *Store) register(ctx context.Context) ([]adopted, error) {
	if !s.memory {
		err := os.MkdirAll(lockDir(s.path), 0o755)
		if err == nil {
			s.lock, err = holdLock(s.lockPath(s.instance))
		}
		if err != nil {
			s.log.Warn("session store: no lock file; only the lease tells other processes this one is alive", "db", s.path, "err", err)
		}
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	dead, err := s.deadInstances(ctx, tx)
	if err != nil {
		return nil, err
	}
	taken, err := s.takeOver(ctx, tx, dead)
	if err != nil {
		return nil, err
	}
	now := time.Now().UnixNano()
	if _, err := tx.ExecContext(ctx, `INSERT INTO instances (id, pid, host, boot_id, started_at, heartbeat_at) VALUES (?, ?, ?, ?, ?, ?)`,
		s.instance, os.Getpid(), s.host, s.boot, now, now); err != nil {
		return nil, err
	}
	if err := tx.Commit(); err != nil {
		return nil, err
	}
	s.dropLocks(dead)
	return taken, nil
}

// deadInstances returns the registered stores that are dead.
func (s *Store) deadInstances(ctx context.Context, tx *sql.Tx) ([]string, error) {
	rows, err := tx.QueryContext(ctx, `SELECT id, pid, host, boot_id, heartbeat_at FROM instances`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var dead []string
	for rows.Next() {
		var in instance
		if err := rows.Scan(&in.id, &in.pid, &in.host, &in.boot, &in.heartbeat); err != nil {
			return nil, err
		}
		if !s.alive(in) {
			dead = append(dead, in.id)
		}
	}
	return dead, rows.Err()
}

// takeOver, inside tx, makes this store the owner of the running sessions
// whose store is dead (listed in dead) or unknown (no row: it closed, or
// it came before ownership was recorded), drops the claims of dead or
// unknown stores and the rows of the dead ones. The sessions stay marked
// running until closeAdopted has closed them: should this process die
// first, they are still running sessions of a dead store, and the next
// store takes them over again.
func (s *Store) takeOver(ctx context.Context, tx *sql.Tx, dead []string) ([]adopted, error) {
	deadJSON, _ := json.Marshal(append([]string{}, dead...))
	// Sessions a durable engine runs (session.MetaEngine) are the
	// engine's to resume, not ours to close.
	rows, err := tx.QueryContext(ctx, `SELECT id, COALESCE(parent_id, '') FROM sessions WHERE status = 'running' AND (
		owner IS NULL OR owner NOT IN (SELECT id FROM instances) OR owner IN (SELECT value FROM json_each(?)))
		AND (metadata IS NULL OR json_extract(metadata, '$.engine') IS NULL)`, string(deadJSON))
	if err != nil {
		return nil, err
	}
	var taken []adopted
	var ids []string
	for rows.Next() {
		var a adopted
		if err := rows.Scan(&a.id, &a.parent); err != nil {
			rows.Close()
			return nil, err
		}
		taken = append(taken, a)
		ids = append(ids, a.id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	idsJSON, _ := json.Marshal(append([]string{}, ids...))
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{`UPDATE sessions SET owner = ? WHERE id IN (SELECT value FROM json_each(?))`, []any{s.instance, string(idsJSON)}},
		{`DELETE FROM claims WHERE instance IN (SELECT value FROM json_each(?)) OR instance NOT IN (SELECT id FROM instances)`, []any{string(deadJSON)}},
		{`DELETE FROM instances WHERE id IN (SELECT value FROM json_each(?))`, []any{string(deadJSON)}},
	} {
		if _, err := tx.ExecContext(ctx, q.sql, q.args...); err != nil {
			return nil, err
		}
	}
	return taken, nil
}

// dropLocks removes the lock files of dead stores.
func (s *Store) dropLocks(dead []string) {
	if s.memory {
		return
	}
	for _, id := range dead {
		os.Remove(s.lockPath(id))
	}
}

// closeAdopted closes what the dead runs of the taken-over sessions left
// open (session.CloseInterrupted, from the top of each tree down) and
// marks every one of them interrupted, but for the trees in which a tool
// call waits for a person's answer (session.FindWaiting): those stay as
// they are, running, for a process that goes on with them
// (pool.Pool.Continue). It returns the sessions it left so.
func (s *Store) closeAdopted(ctx context.Context, taken []adopted) (waiting []string) {
	in := make(map[string]bool, len(taken))
	parent := make(map[string]string, len(taken))
	for _, a := range taken {
		in[a.id] = true
		parent[a.id] = a.parent
	}
	// top is the taken-over session at the top of a's tree.
	top := func(id string) string {
		for range len(taken) {
			p := parent[id]
			if !in[p] {
				break
			}
			id = p
		}
		return id
	}
	kept := map[string]bool{}
	for _, a := range taken {
		if in[a.parent] {
			continue // closed with its parent
		}
		switch w, err := session.FindWaiting(ctx, s, a.id); {
		case err != nil:
			s.log.Warn("session store: read an interrupted session", "db", s.path, "session", a.id, "err", err)
		case w != nil:
			kept[a.id] = true
			continue
		}
		if err := session.CloseInterrupted(ctx, s, a.id); err != nil {
			s.log.Warn("session store: close an interrupted session", "db", s.path, "session", a.id, "err", err)
		}
	}
	// Those no log reaches (created, and the process died before it
	// logged their start).
	for _, a := range taken {
		if kept[top(a.id)] {
			waiting = append(waiting, a.id)
			continue
		}
		err := s.UpdateSession(ctx, a.id, func(r *session.Session) {
			if r.Status == session.StatusRunning {
				r.Status, r.StopReason = session.StatusInterrupted, event.StopInterrupted
			}
		})
		if err != nil {
			s.log.Warn("session store: mark a session interrupted", "db", s.path, "session", a.id, "err", err)
		}
	}
	return waiting
}

// heartbeat renews this store's lease until stop is closed. A renewal
// that finds no row means another process took this store for dead (its
// lease ran out while the process stood still): the row is written again
// and the fact logged, since that process may have closed sessions this
// one still runs.
func (s *Store) heartbeat(stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	t := time.NewTicker(s.opts.Lease / 3)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		now := time.Now().UnixNano()
		res, err := s.db.Exec(`UPDATE instances SET heartbeat_at = ? WHERE id = ?`, now, s.instance)
		if err != nil {
			s.log.Warn("session store: renew the lease", "db", s.path, "err", err)
			continue
		}
		if n, _ := res.RowsAffected(); n == 0 {
			s.log.Error("session store: another process took this one for dead; registering again", "db", s.path, "instance", s.instance)
			_, err = s.db.Exec(`INSERT OR IGNORE INTO instances (id, pid, host, boot_id, started_at, heartbeat_at) VALUES (?, ?, ?, ?, ?, ?)`,
				s.instance, os.Getpid(), s.host, s.boot, now, now)
			if err != nil {
				s.log.Warn("session store: register again", "db", s.path, "err", err)
			}
		}
	}
}
