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
	storetest.Run(t, storetest.Capabilities{
		OpenShared: func(t *testing.T, st session.Store) session.Store {
			return openWith(t, postgres.Options{Schema: st.(*postgres.Store).Schema()})
		},
		Notifies: true,
	}, func(t *testing.T) session.Store { return open(t) })
}

// A panic in an update function is raised in the caller, changes nothing
// and leaves neither a lock nor an open transaction behind.
func TestUpdatePanics(t *testing.T) {
	st := open(t)
	ctx := context.Background()
	if err := st.CreateSession(ctx, session.Session{ID: "ses_1", Title: "before"}); err != nil {
		t.Fatal(err)
	}
	for range 10 { // more than the pool's connections: none is left in a transaction
		func() {
			defer func() {
				if recover() != "boom" {
					t.Fatal("the panic was not raised again")
				}
			}()
			st.UpdateSession(ctx, "ses_1", func(s *session.Session) {
				s.Title = "changed"
				panic("boom")
			})
		}()
	}
	if err := st.UpdateSession(ctx, "ses_1", func(s *session.Session) { s.Cost = 1 }); err != nil {
		t.Fatal(err)
	}
	got, err := st.GetSession(ctx, "ses_1")
	if err != nil || got.Title != "before" || got.Cost != 1 {
		t.Fatalf("after the panics: %+v, %v", got, err)
	}
}
