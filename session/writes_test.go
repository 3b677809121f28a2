package session_test

import (
	"context"
	"errors"
	"testing"

	"github.com/agentpool/agentpool/session"
)

// How a store may take a run's writes is an option of the run's account,
// not a flag of its own: deferring commits comes only with an account that
// sees a deferred write's loss, and a context without one defers nothing.
func TestWriteOptionsAreExplicit(t *testing.T) {
	bg := context.Background()
	if w := session.WritesOf(bg); w != nil || w.CommitsDeferred() || w.Failed() {
		t.Fatalf("a plain context has an account: %v", w)
	}

	ctx, w := session.TrackWrites(bg, session.WriteOptions{DeferCommits: true})
	if session.WritesOf(ctx) != w || !w.CommitsDeferred() {
		t.Fatalf("deferring account: WritesOf %v, deferred %v", session.WritesOf(ctx), w.CommitsDeferred())
	}
	child, cancel := context.WithCancel(ctx)
	defer cancel()
	if session.WritesOf(child) != w {
		t.Error("a context derived from the run's lost its account")
	}

	plain, pw := session.TrackWrites(bg, session.WriteOptions{})
	if pw.CommitsDeferred() || session.WritesOf(plain).CommitsDeferred() {
		t.Error("an account without DeferCommits defers commits")
	}

	// The account sees a loss and refuses the run's later writes.
	disk := errors.New("disk full")
	if err := session.ReportWrite(ctx, 2, disk); err != disk {
		t.Fatalf("ReportWrite = %v", err)
	}
	if err := session.CheckWrite(ctx, 1); !errors.Is(err, session.ErrEarlierWriteLost) {
		t.Fatalf("CheckWrite after a loss = %v", err)
	}
	var nse *session.NotStoredError
	if err := w.Err(); !errors.As(err, &nse) || nse.Writes != 3 || !errors.Is(err, disk) {
		t.Errorf("Err = %v, want 3 writes lost to disk full", err)
	}
	if pw.Failed() {
		t.Error("another run's account saw the loss")
	}
}
