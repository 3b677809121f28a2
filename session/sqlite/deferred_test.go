package sqlite_test

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/session/sqlite"
)

// count counts the rows of q as another process reads the database: what
// is committed.
func count(t *testing.T, path, q string, args ...any) int {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow(q, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// Writes of a run that defers its commits (session.WriteOptions) are answered
// once applied (errors included) and visible to the store at once, and
// committed by the next Flush or Release; a claim taken in the open
// transaction keeps another store out all the same.
func TestDeferredWrites(t *testing.T) {
	path := filepath.Join(t.TempDir(), "deferred.db")
	// A linger longer than the test: only Flush and Release commit.
	a := open(t, path, sqlite.Options{Linger: time.Hour})
	b := open(t, path, sqlite.Options{})
	ctx, _ := session.TrackWrites(context.Background(), session.WriteOptions{DeferCommits: true})

	if err := a.Claim(ctx, "ses_root"); err != nil {
		t.Fatal(err)
	}
	if err := a.CreateSession(ctx, session.Session{ID: "ses_root", Status: session.StatusRunning}); err != nil {
		t.Fatal(err)
	}
	if err := a.CreateSession(ctx, session.Session{ID: "ses_child", ParentID: "ses_root", Depth: 1, Status: session.StatusRunning}); err != nil {
		t.Fatal(err)
	}
	if err := a.CreateSession(ctx, session.Session{ID: "ses_child"}); !errors.Is(err, session.ErrExists) {
		t.Fatalf("create of a taken id: %v", err)
	}
	if err := a.CreateSession(ctx, session.Session{ID: "ses_orphan", ParentID: "ses_none"}); !errors.Is(err, session.ErrNotFound) {
		t.Fatalf("create under a missing parent: %v", err)
	}
	if err := a.UpdateSession(ctx, "ses_child", func(s *session.Session) { s.Title = "done" }); err != nil {
		t.Fatal(err)
	}
	if s, err := a.GetSession(ctx, "ses_child"); err != nil || s.Title != "done" || s.ParentID != "ses_root" {
		t.Fatalf("read of a deferred write: %+v %v", s, err)
	}
	if n := count(t, path, `SELECT COUNT(*) FROM sessions`); n != 0 {
		t.Fatalf("%d sessions committed before any Flush or Release", n)
	}

	// b claims the child: whether it comes before a's commit (it waits for
	// the write lock) or after, a's claim on the root is in its way.
	refused := make(chan error, 1)
	go func() { refused <- b.Claim(context.Background(), "ses_child") }()
	if err := a.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-refused; !errors.Is(err, session.ErrRunning) {
		t.Fatalf("claim under a session another store claimed: %v", err)
	}
	if n := count(t, path, `SELECT COUNT(*) FROM sessions`); n != 2 {
		t.Fatalf("%d sessions committed after Flush, want 2", n)
	}
	if n := count(t, path, `SELECT COUNT(*) FROM claims WHERE session_id = 'ses_root'`); n != 1 {
		t.Fatalf("the root's claim is not stored after Flush")
	}
	if s, err := b.GetSession(context.Background(), "ses_child"); err != nil || s.Title != "done" {
		t.Fatalf("another store reads %+v %v", s, err)
	}

	if err := a.UpdateSession(ctx, "ses_root", func(s *session.Session) { s.Status = session.StatusCompleted }); err != nil {
		t.Fatal(err)
	}
	if err := a.Release(ctx, "ses_root"); err != nil {
		t.Fatal(err)
	}
	if n := count(t, path, `SELECT COUNT(*) FROM sessions WHERE status = 'completed'`); n != 1 {
		t.Fatalf("the root's end is not committed by Release")
	}
	if n := count(t, path, `SELECT COUNT(*) FROM claims`); n != 0 {
		t.Fatalf("%d claims left after Release", n)
	}
}

// The record cache never answers with a record another connection changed:
// an update after another store's commit starts from that store's version.
func TestRecordCacheSeesOtherStores(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cache.db")
	a := open(t, path, sqlite.Options{Linger: time.Hour})
	b := open(t, path, sqlite.Options{})
	ctx, _ := session.TrackWrites(context.Background(), session.WriteOptions{DeferCommits: true})
	if err := a.CreateSession(ctx, session.Session{ID: "ses_1", Title: "by a"}); err != nil {
		t.Fatal(err)
	}
	if err := a.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.UpdateSession(context.Background(), "ses_1", func(s *session.Session) { s.Title = "by b" }); err != nil {
		t.Fatal(err)
	}
	var seen string
	if err := a.UpdateSession(ctx, "ses_1", func(s *session.Session) { seen = s.Title; s.Cost = 1 }); err != nil {
		t.Fatal(err)
	}
	if seen != "by b" {
		t.Fatalf("the update started from %q, not from the other store's %q", seen, "by b")
	}
	if s, err := a.GetSession(ctx, "ses_1"); err != nil || s.Title != "by b" || s.Cost != 1 {
		t.Fatalf("read: %+v %v", s, err)
	}
	// Commit before the stores close: with this linger, a would hold the
	// write lock that b's Close needs.
	if err := a.Flush(ctx); err != nil {
		t.Fatal(err)
	}
}
