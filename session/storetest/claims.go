package storetest

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/agentpool/agentpool/session"
)

// wantRunning checks that err refuses a claim on id because of a claim on
// held by this process.
func wantRunning(t *testing.T, err error, id, held string) {
	t.Helper()
	var re *session.RunningError
	if !errors.Is(err, session.ErrRunning) || !errors.As(err, &re) {
		t.Fatalf("Claim(%s) = %v, want a *RunningError", id, err)
	}
	host, _ := os.Hostname()
	if re.SessionID != id || re.Claimed != held || re.Owner.PID != os.Getpid() || re.Owner.Host != host || re.Owner.Since.IsZero() {
		t.Errorf("Claim(%s) refused with %+v, want session %s held by %s in process %d on %s", id, re, id, held, os.Getpid(), host)
	}
	if !strings.Contains(err.Error(), id) || !strings.Contains(err.Error(), "already running") {
		t.Errorf("refusal %q does not name the session", err)
	}
}

// A claim is held until it is released, and a released session can be
// claimed again.
func testClaimRelease(t *testing.T, st session.Store) {
	ctx := context.Background()
	mustCreate(t, st, newSession("ses_1", "", 0, base))
	if err := st.Claim(ctx, "ses_1"); err != nil {
		t.Fatal(err)
	}
	wantRunning(t, st.Claim(ctx, "ses_1"), "ses_1", "ses_1")
	if err := st.Release(ctx, "ses_1"); err != nil {
		t.Fatal(err)
	}
	if err := st.Claim(ctx, "ses_1"); err != nil {
		t.Fatalf("Claim after Release: %v", err)
	}
	// Releasing what is not held is a no-op.
	if err := st.Release(ctx, "ses_never_claimed"); err != nil {
		t.Fatalf("Release of an unclaimed session: %v", err)
	}
}

// A claim covers the session's line: its ancestors and its descendants
// cannot be claimed while it is held; siblings can.
func testClaimLineage(t *testing.T, st session.Store) {
	ctx := context.Background()
	mustCreate(t, st, newSession("ses_root", "", 0, base))
	mustCreate(t, st, newSession("ses_a", "ses_root", 1, base))
	mustCreate(t, st, newSession("ses_a1", "ses_a", 2, base))
	mustCreate(t, st, newSession("ses_b", "ses_root", 1, base))
	if err := st.Claim(ctx, "ses_root"); err != nil {
		t.Fatal(err)
	}
	wantRunning(t, st.Claim(ctx, "ses_a1"), "ses_a1", "ses_root")
	if err := st.Release(ctx, "ses_root"); err != nil {
		t.Fatal(err)
	}
	if err := st.Claim(ctx, "ses_a"); err != nil {
		t.Fatal(err)
	}
	wantRunning(t, st.Claim(ctx, "ses_root"), "ses_root", "ses_a")
	wantRunning(t, st.Claim(ctx, "ses_a1"), "ses_a1", "ses_a")
	if err := st.Claim(ctx, "ses_b"); err != nil {
		t.Fatalf("a sibling's claim: %v", err)
	}
}

// A run claims the id of the session it is about to create.
func testClaimNewSession(t *testing.T, st session.Store) {
	ctx := context.Background()
	if err := st.Claim(ctx, "ses_new"); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, st, newSession("ses_new", "", 0, base))
	wantRunning(t, st.Claim(ctx, "ses_new"), "ses_new", "ses_new")
	mustCreate(t, st, newSession("ses_kid", "ses_new", 1, base))
	wantRunning(t, st.Claim(ctx, "ses_kid"), "ses_kid", "ses_new")
}

// Of many concurrent claims on one session exactly one succeeds.
func testClaimConcurrent(t *testing.T, st session.Store) {
	ctx := context.Background()
	mustCreate(t, st, newSession("ses_1", "", 0, base))
	for round := range 5 {
		const n = 8
		var wg sync.WaitGroup
		errs := make([]error, n)
		for i := range n {
			wg.Go(func() { errs[i] = st.Claim(ctx, "ses_1") })
		}
		wg.Wait()
		won := 0
		for _, err := range errs {
			switch {
			case err == nil:
				won++
			case !errors.Is(err, session.ErrRunning):
				t.Fatalf("round %d: %v", round, err)
			}
		}
		if won != 1 {
			t.Fatalf("round %d: %d of %d concurrent claims succeeded", round, won, n)
		}
		if err := st.Release(ctx, "ses_1"); err != nil {
			t.Fatal(err)
		}
	}
}
