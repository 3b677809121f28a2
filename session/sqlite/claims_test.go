package sqlite_test

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/internal/proctree/proctreetest"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/session/sqlite"
)

func open(t *testing.T, path string, opts sqlite.Options) *sqlite.Store {
	t.Helper()
	st, err := sqlite.Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// execSQL runs q on path as another process would, waiting for the write
// lock as the stores do (a store holds it up to Linger with writes not
// committed yet).
func execSQL(t *testing.T, path, q string, args ...any) {
	t.Helper()
	db, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(q, args...); err != nil {
		t.Fatal(err)
	}
}

// Two stores on one database (two processes, as far as the database can
// tell): a claim of one refuses the other, naming where the session runs,
// until it is released or its store closed; what the holder wrote before
// releasing is there for the next one.
func TestClaimAcrossStores(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "two.db")
	a, b := open(t, path, sqlite.Options{}), open(t, path, sqlite.Options{})
	if err := a.CreateSession(ctx, session.Session{ID: "ses_1", Status: session.StatusRunning}); err != nil {
		t.Fatal(err)
	}
	if err := a.Claim(ctx, "ses_1"); err != nil {
		t.Fatal(err)
	}
	err := b.Claim(ctx, "ses_1")
	var re *session.RunningError
	host, _ := os.Hostname()
	if !errors.As(err, &re) || re.Owner.PID != os.Getpid() || re.Owner.Host != host || re.Owner.Instance == "" {
		t.Fatalf("claim of a session another store holds: %v", err)
	}
	if err := a.AppendEvents(ctx, "ses_1", event.PartEnd{Index: 7}); err != nil {
		t.Fatal(err)
	}
	if err := a.Release(ctx, "ses_1"); err != nil {
		t.Fatal(err)
	}
	if err := b.Claim(ctx, "ses_1"); err != nil {
		t.Fatalf("claim after the release: %v", err)
	}
	if recs, err := b.Events(ctx, "ses_1", 0); err != nil || len(recs) != 1 {
		t.Fatalf("the next owner does not see what the last one wrote: %v %v", recs, err)
	}
	// Closing a store lets go of its claims.
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if err := a.Claim(ctx, "ses_1"); err != nil {
		t.Fatalf("claim after the holder closed: %v", err)
	}
	// A session that stays running in a live store is not recovered.
	c := open(t, path, sqlite.Options{})
	if len(c.Recovered()) != 0 {
		t.Fatalf("a live store's session recovered: %v", c.Recovered())
	}
	if s, _ := c.GetSession(ctx, "ses_1"); s.Status != session.StatusRunning {
		t.Fatalf("status %s", s.Status)
	}
}

// ghost registers a store on host (this one when "") with the given
// heartbeat and boot id, holding a claim on a running session of its own.
// It has no lock file unless freeLock: then its lock file is there and
// nobody holds it.
func ghost(t *testing.T, path, sid, host, boot string, heartbeat time.Time, freeLock bool) {
	t.Helper()
	if host == "" {
		host, _ = os.Hostname()
	}
	execSQL(t, path, `INSERT INTO instances (id, pid, host, boot_id, started_at, heartbeat_at) VALUES ('ins_ghost', 4242, ?, ?, 1, ?)`, host, boot, heartbeat.UnixNano())
	execSQL(t, path, `UPDATE sessions SET owner = 'ins_ghost', status = 'running' WHERE id = ?`, sid)
	execSQL(t, path, `INSERT INTO claims (session_id, instance, claimed_at) VALUES (?, 'ins_ghost', 1)`, sid)
	if freeLock {
		if err := os.WriteFile(filepath.Join(path+".instances", "ins_ghost.lock"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// Whether a store that left no held lock is alive: a free lock of this
// machine means dead at once; without a lock to trust (none, or a free
// one of another machine, which a network file system may not show), the
// store is alive while its lease runs (its heartbeat is recent), and dead
// once it has run out, or when it ran before this machine last booted.
func TestClaimLeaseAndBootID(t *testing.T) {
	ctx := context.Background()
	boot, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	// The ghost's heartbeat is its age when the ghost is written, not a
	// time taken before the cases: under load the earlier cases take long
	// enough for a "fresh" beat to outlive the 10 s lease.
	const fresh, old = time.Duration(0), time.Minute
	for _, tc := range []struct {
		name, host, boot string
		heartbeat        time.Duration // the ghost's heartbeat this long ago
		freeLock, alive  bool
	}{
		{name: "no lock, lease running", heartbeat: fresh, alive: true},
		{name: "no lock, lease run out", heartbeat: old},
		{name: "no lock, same boot, lease running", boot: strings.TrimSpace(string(boot)), heartbeat: fresh, alive: true},
		{name: "no lock, before the last boot", boot: "an-earlier-boot", heartbeat: fresh},
		{name: "free lock of this machine", heartbeat: fresh, freeLock: true},
		{name: "free lock of another machine, lease running", host: "elsewhere", boot: "its-boot", heartbeat: fresh, freeLock: true, alive: true},
		{name: "free lock of another machine, lease run out", host: "elsewhere", boot: "its-boot", heartbeat: old, freeLock: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.boot != "" && tc.host == "" && len(boot) == 0 {
				t.Skip("no boot id on this system")
			}
			path := filepath.Join(t.TempDir(), "lease.db")
			st := open(t, path, sqlite.Options{Lease: 10 * time.Second})
			if err := st.CreateSession(ctx, session.Session{ID: "ses_g", Status: session.StatusRunning}); err != nil {
				t.Fatal(err)
			}
			if err := st.AppendEvents(ctx, "ses_g", event.RunStarted{SessionID: "ses_g", RunID: "run_g"}); err != nil {
				t.Fatal(err)
			}
			if err := st.Flush(ctx); err != nil {
				t.Fatal(err)
			}
			ghost(t, path, "ses_g", tc.host, tc.boot, time.Now().Add(-tc.heartbeat), tc.freeLock)
			err := st.Claim(ctx, "ses_g")
			if tc.alive {
				var re *session.RunningError
				if !errors.As(err, &re) || re.Owner.PID != 4242 || re.Owner.Instance != "ins_ghost" {
					t.Fatalf("claim of a live store's session: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("claim of a dead store's session: %v", err)
			}
			// The dead store's run was taken over and closed.
			s, err := st.GetSession(ctx, "ses_g")
			if err != nil || s.Status != session.StatusInterrupted {
				t.Fatalf("the dead store's session: %s (%v)", s.Status, err)
			}
			recs, _ := st.Events(ctx, "ses_g", 0)
			if last := recs[len(recs)-1].Event; last.Kind() != event.KindRunError {
				t.Fatalf("its log ends with %s", last.Kind())
			}
		})
	}
}

// A held lock file wins over the lease: a live store whose heartbeat is
// late (its process stood still) keeps its claims.
func TestClaimLockBeatsLease(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "lock.db")
	a := open(t, path, sqlite.Options{})
	if err := a.Claim(ctx, "ses_1"); err != nil {
		t.Fatal(err)
	}
	execSQL(t, path, `UPDATE instances SET heartbeat_at = 0, boot_id = 'an-earlier-boot'`)
	b := open(t, path, sqlite.Options{Lease: time.Second})
	if err := b.Claim(ctx, "ses_1"); !errors.Is(err, session.ErrRunning) {
		t.Fatalf("claim of a session a live store holds: %v", err)
	}
}

// The heartbeat renews the lease, and registers the store again when
// another process took it for dead and dropped its row.
func TestHeartbeat(t *testing.T) {
	path := filepath.Join(t.TempDir(), "beat.db")
	open(t, path, sqlite.Options{Lease: 90 * time.Millisecond})
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`DELETE FROM instances`); err != nil {
		t.Fatal(err)
	}
	deleted := time.Now().UnixNano()
	// The store's writes (the renewal, the row written again) reach the
	// database's files: each is a notice (inotify) to look again.
	var err2 error
	if !proctreetest.WaitDir(filepath.Dir(path), 10*time.Second, func() bool {
		var beat int64
		err2 = db.QueryRow(`SELECT heartbeat_at FROM instances`).Scan(&beat)
		return err2 == nil && beat > deleted
	}) {
		t.Fatalf("no heartbeat since the row was dropped (%v)", err2)
	}
}
