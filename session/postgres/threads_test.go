package postgres_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/agentpool/agentpool/internal/pgtest"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/session/postgres"
)

// TestAGUIThreadGrowthPostgresPlan: finding a session by its AG-UI thread
// (ListOptions.Thread) can use the index sessions_thread (issue 31: after
// 10,000 threads every AG-UI run read them all). Sequential scans are
// switched off for the EXPLAIN: on a small table the planner would rather
// read it all, and the point is that the index serves the query.
func TestAGUIThreadGrowthPostgresPlan(t *testing.T) {
	name, schemaURL := pgtest.Schema(t)
	st := openIn(t, name)
	ctx := context.Background()
	for i := range 50 {
		s := session.Session{ID: fmt.Sprintf("ses_%02d", i), Metadata: map[string]any{session.MetaThread: fmt.Sprint("t-", i)}}
		if err := st.CreateSession(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	conn, err := pgx.Connect(ctx, schemaURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `SET enable_seqscan = off`); err != nil {
		t.Fatal(err)
	}
	for _, opts := range []session.ListOptions{
		{Thread: "t-7", RootsOnly: true, Limit: 1},
		{Thread: "t-7"},
	} {
		q, args := postgres.ListQuery(opts)
		rows, err := conn.Query(ctx, "EXPLAIN "+q, args...)
		if err != nil {
			t.Fatal(err)
		}
		plan, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		got := strings.Join(plan, "\n")
		if !strings.Contains(got, "sessions_thread") {
			t.Errorf("%+v: plan\n%s\nwant the index sessions_thread", opts, got)
		}
		found, err := st.ListSessions(ctx, opts)
		if err != nil || len(found) != 1 || found[0].ID != "ses_07" {
			t.Errorf("%+v: found %v, %v; want ses_07", opts, found, err)
		}
	}
}
