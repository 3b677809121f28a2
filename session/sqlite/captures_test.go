package sqlite_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/session/sqlite"
)

// A content is stored once however many captures hold it, and deleting
// the sessions (their captures go by cascade) collects it.
func TestCaptureContentsCollected(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "test.db")
	st, err := sqlite.Open(path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	// A run's deferred create: the capture must see it.
	wctx, _ := session.TrackWrites(ctx, session.WriteOptions{DeferCommits: true})
	for _, id := range []string{"ses_1", "ses_2"} {
		if err := st.CreateSession(wctx, session.Session{ID: id, Status: session.StatusRunning}); err != nil {
			t.Fatal(err)
		}
		c := session.Capture{SessionID: id, MessageID: "m", Root: "/ws", Path: "f", Exists: true, Content: []byte("same")}
		if ok, err := st.PutCapture(wctx, c); err != nil || !ok {
			t.Fatalf("PutCapture = %v, %v", ok, err)
		}
	}
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	blobs := func() int {
		t.Helper()
		var n int
		if err := db.QueryRow(`SELECT count(*) FROM blobs`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := blobs(); n != 1 {
		t.Fatalf("%d contents stored for one content in two sessions", n)
	}
	if err := st.DeleteSession(ctx, "ses_1"); err != nil {
		t.Fatal(err)
	}
	if n := blobs(); n != 1 {
		t.Fatalf("%d contents after deleting one of two sessions, want 1", n)
	}
	if err := st.DeleteSession(ctx, "ses_2"); err != nil {
		t.Fatal(err)
	}
	if n := blobs(); n != 0 {
		t.Fatalf("%d contents after deleting both sessions, want 0", n)
	}
}
