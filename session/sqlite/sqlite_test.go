package sqlite_test

import (
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

func TestConformance(t *testing.T) {
	storetest.Run(t, openFile)
}

func TestConformanceMemory(t *testing.T) {
	storetest.Run(t, func(t *testing.T) session.Store {
		st, err := sqlite.Open(":memory:", sqlite.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return st
	})
}

// Tiny batches and a tiny queue exercise chunking and back-pressure.
func TestConformanceSmallBatches(t *testing.T) {
	storetest.Run(t, func(t *testing.T) session.Store {
		st, err := sqlite.Open(filepath.Join(t.TempDir(), "test.db"), sqlite.Options{BatchSize: 3, MaxPending: 5, Linger: -1})
		if err != nil {
			t.Fatal(err)
		}
		return st
	})
}
