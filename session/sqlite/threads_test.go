package sqlite_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/session/sqlite"
)

// TestAGUIThreadGrowthSQLitePlan: finding a session by its AG-UI thread
// (ListOptions.Thread) searches the index sessions_thread instead of
// reading every session (issue 31: after 10,000 threads every AG-UI run
// read them all). The plan is SQLite's own (EXPLAIN QUERY PLAN) for the
// query ListSessions runs.
func TestAGUIThreadGrowthSQLitePlan(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "threads.db")
	st, err := sqlite.Open(path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for i := range 50 {
		s := session.Session{ID: fmt.Sprintf("ses_%02d", i), Metadata: map[string]any{session.MetaThread: fmt.Sprint("t-", i)}}
		if err := st.CreateSession(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, opts := range []session.ListOptions{
		{Thread: "t-7", RootsOnly: true, Limit: 1},
		{Thread: "t-7"},
	} {
		q, args := sqlite.ListQuery(opts)
		rows, err := db.QueryContext(ctx, "EXPLAIN QUERY PLAN "+q, args...)
		if err != nil {
			t.Fatal(err)
		}
		var plan []string
		for rows.Next() {
			var id, parent, unused int
			var detail string
			if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, detail)
		}
		rows.Close()
		got := strings.Join(plan, "; ")
		if !strings.Contains(got, "SEARCH sessions USING INDEX sessions_thread") || strings.Contains(got, "SCAN sessions") {
			t.Errorf("%+v: plan %q, want a search of the index sessions_thread", opts, got)
		}
		found, err := st.ListSessions(ctx, opts)
		if err != nil || len(found) != 1 || found[0].ID != "ses_07" {
			t.Errorf("%+v: found %v, %v; want ses_07", opts, found, err)
		}
	}
}
