package postgres_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/agentpool/agentpool/internal/slognotice"

	"github.com/agentpool/agentpool/internal/pgtest"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/session/postgres"
)

// Claims hold between stores (processes): one's claim refuses the
// other's on the line, a release frees it, and a store's claims end with
// it (Close).
func TestClaimsAcrossStores(t *testing.T) {
	name, _ := pgtest.Schema(t)
	a, b := openIn(t, name), openIn(t, name)
	ctx := context.Background()
	for _, s := range []session.Session{{ID: "ses_root"}, {ID: "ses_kid", ParentID: "ses_root", Depth: 1}, {ID: "ses_other"}} {
		if err := a.CreateSession(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Claim(ctx, "ses_kid"); err != nil {
		t.Fatal(err)
	}
	var re *session.RunningError
	if err := b.Claim(ctx, "ses_root"); !errors.As(err, &re) || re.Claimed != "ses_kid" || re.Owner.Since.IsZero() {
		t.Fatalf("b.Claim(ses_root) = %v, want refused for ses_kid", err)
	}
	if err := b.Claim(ctx, "ses_other"); err != nil {
		t.Fatalf("an unrelated session: %v", err)
	}
	if err := a.Release(ctx, "ses_kid"); err != nil {
		t.Fatal(err)
	}
	if err := b.Claim(ctx, "ses_root"); err != nil {
		t.Fatalf("after release: %v", err)
	}
	if err := a.Claim(ctx, "ses_kid"); !errors.Is(err, session.ErrRunning) {
		t.Fatalf("a.Claim(ses_kid) under b's claim on its parent = %v", err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if err := a.Claim(ctx, "ses_kid"); err != nil {
		t.Fatalf("after the holder closed: %v", err)
	}
}

// A claim whose store lost its owner connection (the process died, the
// network went away: here pg_terminate_backend) no longer counts: another
// store takes the session over.
func TestClaimTakenOverWhenOwnerDies(t *testing.T) {
	name, _ := pgtest.Schema(t)
	// a does not make its owner connection again within the test.
	a, b := openWith(t, postgres.Options{Schema: name, OwnerCheck: time.Hour}), openIn(t, name)
	ctx := context.Background()
	if err := a.CreateSession(ctx, session.Session{ID: "ses_1"}); err != nil {
		t.Fatal(err)
	}
	if err := a.Claim(ctx, "ses_1"); err != nil {
		t.Fatal(err)
	}
	if err := b.Claim(ctx, "ses_1"); !errors.Is(err, session.ErrRunning) {
		t.Fatalf("b.Claim while a lives = %v", err)
	}
	// The server releases the lock as the backend exits; with a timeout,
	// pg_terminate_backend returns once it has exited (PostgreSQL 14).
	pgtest.Exec(t, `SELECT pg_terminate_backend($1, 20000)`, int64(a.OwnerBackendPID()))
	if err := b.Claim(ctx, "ses_1"); err != nil {
		t.Fatalf("b.Claim after a's owner connection ended = %v", err)
	}
	if err := a.Claim(ctx, "ses_1"); !errors.Is(err, session.ErrRunning) {
		t.Fatalf("a.Claim after b took over = %v", err)
	}
}

// A store whose owner connection was lost makes it again (Options.
// OwnerCheck): its claims, which nobody took meanwhile, count again.
func TestOwnerConnectionRestored(t *testing.T) {
	name, _ := pgtest.Schema(t)
	back := make(chan struct{}, 1)
	log := slog.New(slognotice.New("session store: the connection that holds this process's claims is back", back))
	a, b := openWith(t, postgres.Options{Schema: name, OwnerCheck: 50 * time.Millisecond, Logger: log}), openIn(t, name)
	ctx := context.Background()
	if err := a.Claim(ctx, "ses_1"); err != nil {
		t.Fatal(err)
	}
	old := a.OwnerBackendPID()
	pgtest.Exec(t, `SELECT pg_terminate_backend($1, 20000)`, int64(old))
	select {
	case <-back: // logged once the new owner connection holds the lock
	case <-time.After(20 * time.Second):
		t.Fatal("the owner connection was not made again")
	}
	if a.OwnerBackendPID() == old {
		t.Fatal("the owner connection is back on the old backend")
	}
	if err := b.Claim(ctx, "ses_1"); !errors.Is(err, session.ErrRunning) {
		t.Fatalf("b.Claim after a's owner connection is back = %v", err)
	}
}
