package postgres_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/internal/pgtest"
	"github.com/agentpool/agentpool/session"
)

// fillDisk makes the schema's event inserts and claim deletes fail as a
// server out of disk space fails them (SQLSTATE 53100, disk_full), until
// the returned function gives the room back.
func fillDisk(t *testing.T, schema string) (room func()) {
	t.Helper()
	s := pgx.Identifier{schema}.Sanitize()
	pgtest.Exec(t, `CREATE FUNCTION `+s+`.disk_full() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN RAISE EXCEPTION 'could not extend file: No space left on device' USING ERRCODE = 'disk_full'; END $$`)
	pgtest.Exec(t, `CREATE TRIGGER disk_full BEFORE INSERT ON `+s+`.events FOR EACH STATEMENT EXECUTE FUNCTION `+s+`.disk_full()`)
	pgtest.Exec(t, `CREATE TRIGGER disk_full BEFORE DELETE ON `+s+`.claims FOR EACH STATEMENT EXECUTE FUNCTION `+s+`.disk_full()`)
	return func() {
		pgtest.Exec(t, `DROP TRIGGER disk_full ON `+s+`.events`)
		pgtest.Exec(t, `DROP TRIGGER disk_full ON `+s+`.claims`)
	}
}

// TestDiskFullDuringRun (the PostgreSQL store's part): a server out of
// space fails a run's append; the run's account has it, naming the store
// and the server's error; the run's later writes are refused (a prefix is
// stored); its Release fails too, yet ends the claim, so that once there
// is room the store claims the session again.
func TestDiskFullDuringRun(t *testing.T) {
	schema, _ := pgtest.Schema(t)
	st := openIn(t, schema)
	bg := context.Background()
	if err := st.CreateSession(bg, session.Session{ID: "ses_run", Status: session.StatusRunning}); err != nil {
		t.Fatal(err)
	}
	if err := st.Claim(bg, "ses_run"); err != nil {
		t.Fatal(err)
	}
	ctx, writes := session.TrackWrites(bg, session.WriteOptions{})
	if err := st.AppendEvents(ctx, "ses_run", event.RunStarted{RunID: "run_1"}); err != nil {
		t.Fatal(err)
	}
	room := fillDisk(t, schema)
	if err := st.AppendEvents(ctx, "ses_run", event.PartEnd{}); err == nil || !strings.Contains(err.Error(), "No space left on device") {
		t.Fatalf("append on a full disk = %v", err)
	}
	if err := st.UpdateSession(ctx, "ses_run", func(s *session.Session) { s.Status = session.StatusCompleted }); !errors.Is(err, session.ErrEarlierWriteLost) {
		t.Errorf("the final update after the loss = %v, want ErrEarlierWriteLost", err)
	}
	if err := st.Release(ctx, "ses_run"); err == nil {
		t.Error("the release on a full disk succeeded")
	}
	lost := writes.Err()
	if !errors.Is(lost, session.ErrNotStored) || !strings.Contains(lost.Error(), "store postgres "+st.URL()) || !strings.Contains(lost.Error(), "No space left on device") {
		t.Fatalf("the run's account = %v, want the store and the server's error", lost)
	}

	room()
	if err := st.Claim(bg, "ses_run"); err != nil {
		t.Fatalf("a claim after the failed release: %v", err)
	}
	rec, err := st.GetSession(bg, "ses_run")
	if err != nil || rec.Status != session.StatusRunning {
		t.Errorf("after the refused update the session reads %s (%v), want running (a prefix)", rec.Status, err)
	}
	if recs, err := st.Events(bg, "ses_run", 0); err != nil || len(recs) != 1 {
		t.Errorf("%d events stored (%v), want the one before the loss", len(recs), err)
	}
}
