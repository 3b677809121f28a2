package sqlite_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"

	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/session/sqlite"
	"github.com/agentpool/agentpool/session/storetest"
)

func TestMain(m *testing.M) {
	if crashChild() {
		return
	}
	goleak.VerifyTestMain(m)
}

func openFile(t *testing.T) session.Store {
	t.Helper()
	st, err := sqlite.Open(filepath.Join(t.TempDir(), "test.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// fileCaps: a file is shared with the other stores that open it.
var fileCaps = storetest.Capabilities{
	DeferredCommits: true,
	OpenShared: func(t *testing.T, st session.Store) session.Store {
		other, err := sqlite.Open(st.(*sqlite.Store).Path(), sqlite.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return other
	},
}

func TestConformance(t *testing.T) {
	storetest.Run(t, fileCaps, openFile)
}

func TestConformanceMemory(t *testing.T) {
	storetest.Run(t, storetest.Capabilities{DeferredCommits: true}, func(t *testing.T) session.Store {
		st, err := sqlite.Open(":memory:", sqlite.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return st
	})
}

// Tiny batches and a tiny queue exercise chunking and back-pressure.
func TestConformanceSmallBatches(t *testing.T) {
	// No linger: the store commits every batch and ignores WriteOptions.DeferCommits.
	storetest.Run(t, storetest.Capabilities{OpenShared: fileCaps.OpenShared}, func(t *testing.T) session.Store {
		st, err := sqlite.Open(filepath.Join(t.TempDir(), "test.db"), sqlite.Options{BatchSize: 3, MaxPending: 5, Linger: -1})
		if err != nil {
			t.Fatal(err)
		}
		return st
	})
}

func TestExists(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(filepath.Join(t.TempDir(), "s.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	check := func(st *sqlite.Store, id string, want bool) {
		t.Helper()
		got, err := st.Exists(ctx, id)
		if err != nil || got != want {
			t.Fatalf("Exists(%s) = %v, %v; want %v", id, got, err, want)
		}
	}
	check(st, "ses_a", false)
	if err := st.CreateSession(ctx, session.Session{ID: "ses_a", Status: session.StatusRunning}); err != nil {
		t.Fatal(err)
	}
	check(st, "ses_a", true)
	// Another store on the same file finds it by a read.
	other, err := sqlite.Open(st.Path(), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	check(other, "ses_a", true)
	check(other, "ses_b", false)
	if err := other.Close(); err != nil {
		t.Fatal(err)
	}
	if err := st.DeleteSession(ctx, "ses_a"); err != nil {
		t.Fatal(err)
	}
	check(st, "ses_a", false)
	st.Close()
	if _, err := st.Exists(ctx, "ses_a"); !errors.Is(err, session.ErrClosed) {
		t.Fatalf("Exists after Close: %v", err)
	}
}
