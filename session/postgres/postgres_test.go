package postgres_test

import (
	"context"
	"testing"

	"go.uber.org/goleak"

	"github.com/agentpool/agentpool/internal/pgtest"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/session/postgres"
	"github.com/agentpool/agentpool/session/storetest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// open opens a store in a fresh schema of the test server.
func open(t *testing.T) *postgres.Store {
	t.Helper()
	name, _ := pgtest.Schema(t)
	return openIn(t, name)
}

// openIn opens another store on the schema (another "process").
func openIn(t *testing.T, schema string) *postgres.Store {
	t.Helper()
	return openWith(t, postgres.Options{Schema: schema})
}

func openWith(t *testing.T, opts postgres.Options) *postgres.Store {
	t.Helper()
	st, err := postgres.Open(context.Background(), pgtest.URL(t), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) session.Store { return open(t) })
}
