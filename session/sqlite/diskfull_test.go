package sqlite_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/internal/tinyfs"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/session/sqlite"
)

// tinyDisk mounts a small tmpfs for a real disk-full test; without the
// right to mount it skips, saying so (under CI=true it fails).
func tinyDisk(t *testing.T) string {
	t.Helper()
	dir, err := tinyfs.Mount(t, 8<<20)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal(err)
		}
		t.Skipf("no disk to fill: %v", err)
	}
	return dir
}

// TestDiskFullDuringRun (the SQLite store's part), on a real file system
// that fills up during a run: the run's appends and its final update are
// answered at once and their commit fails with the Release's (a linger
// longer than the test: one transaction), yet the run's account
// (session.TrackWrites) has the loss, naming the store and SQLite's
// "database or disk is full"; what is stored of the run is a prefix of
// what it wrote; the Release that could not commit still ended the claim,
// so that once there is room again the store claims the session, and
// reopened the session reads interrupted, not running.
func TestDiskFullDuringRun(t *testing.T) {
	dir := tinyDisk(t)
	path := filepath.Join(dir, "db.sqlite")
	st := open(t, path, sqlite.Options{Linger: time.Hour})
	bg := context.Background()
	if err := st.CreateSession(bg, session.Session{ID: "ses_run", Status: session.StatusRunning}); err != nil {
		t.Fatal(err)
	}
	if err := st.Claim(bg, "ses_run"); err != nil {
		t.Fatal(err)
	}
	ctx, writes := session.TrackWrites(bg, session.WriteOptions{DeferCommits: true})
	if err := st.AppendEvents(ctx, "ses_run", event.RunStarted{RunID: "run_1"}); err != nil {
		t.Fatal(err)
	}
	if err := st.Flush(bg); err != nil {
		t.Fatal(err)
	}
	filler := tinyfs.Fill(t, dir, 64<<10)

	// Two MiB of answer on a disk with 64 KiB left.
	chunk := strings.Repeat("x", 32<<10)
	for i := range 64 {
		if err := st.AppendEvents(ctx, "ses_run", event.PartDelta{Index: i, Delta: event.Delta{PartDeltaKind: "text", ContentDelta: chunk}}); err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
	}
	if err := st.UpdateSession(ctx, "ses_run", func(s *session.Session) { s.Status = session.StatusCompleted }); err != nil {
		t.Fatalf("the final update, answered before its commit: %v", err)
	}
	if err := st.Release(ctx, "ses_run"); err == nil || !strings.Contains(err.Error(), "database or disk is full") {
		t.Fatalf("the release on a full disk = %v", err)
	}

	lost := writes.Err()
	var ns *session.NotStoredError
	if !errors.As(lost, &ns) || !strings.Contains(lost.Error(), fmt.Sprintf("store sqlite %s: database or disk is full", path)) {
		t.Fatalf("the run's account = %v, want the store and SQLite's disk-full error", lost)
	}
	t.Logf("account: %v", lost)

	// Room again.
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	if err := st.Claim(bg, "ses_run"); err != nil {
		t.Fatalf("a claim after the failed release: %v", err)
	}
	if err := st.Release(bg, "ses_run"); err != nil {
		t.Fatal(err)
	}
	recs, err := st.Events(bg, "ses_run", 0)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range recs[1:] {
		if d, ok := r.Event.(event.PartDelta); !ok || d.Index != i {
			t.Fatalf("stored event %d is %#v: not a prefix of the run's appends", i+1, r.Event)
		}
	}
	if got := len(recs) - 1; got+ns.Writes < 66 {
		t.Errorf("%d deltas stored and %d writes lost: some of the run's 66 writes are missing from both", got, ns.Writes)
	}
	if err := st.Close(); err != nil {
		t.Logf("close: %v (the store's first failed commit)", err)
	}
	again := open(t, path, sqlite.Options{})
	rec, err := again.GetSession(bg, "ses_run")
	if err != nil {
		t.Fatal(err)
	}
	if rec.Status != session.StatusInterrupted && rec.Status != session.StatusError {
		t.Errorf("after reopening, the session reads %s, want interrupted or error", rec.Status)
	}
}

// TestDiskFullDuringRunCloseCannotWrite: a store that cannot delete its
// row when it closes (a full disk; here another connection holds the
// write lock past the busy timeout) leaves its lock file, free, so that
// the next store sees it dead at once and recovers its running session
// (interrupted), rather than taking it for alive until its lease ran out.
func TestDiskFullDuringRunCloseCannotWrite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db.sqlite")
	st, err := sqlite.Open(path, sqlite.Options{BusyTimeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	bg := context.Background()
	if err := st.CreateSession(bg, session.Session{ID: "ses_run", Status: session.StatusRunning}); err != nil {
		t.Fatal(err)
	}
	if err := st.Flush(bg); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	conn, err := db.Conn(bg)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(bg, "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err == nil {
		t.Fatal("Close deleted its row under another connection's write lock")
	}
	if _, err := conn.ExecContext(bg, "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	again := open(t, path, sqlite.Options{})
	if got := again.Recovered(); len(got) != 1 || got[0] != "ses_run" {
		t.Fatalf("recovered %v, want the closed store's running session", got)
	}
	if rec, err := again.GetSession(bg, "ses_run"); err != nil || rec.Status != session.StatusInterrupted {
		t.Errorf("the session reads %s (%v), want interrupted", rec.Status, err)
	}
}
