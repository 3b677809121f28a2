package durable

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/agentpool/agentpool/internal/pgtest"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/session/postgres"
	"github.com/agentpool/agentpool/session/sqlite"
)

// testDB returns the database the processes of an end-to-end test share:
// a fresh PostgreSQL schema (a URL with search_path) when
// AGENTPOOL_TEST_POSTGRES is set, as under `make test-go` and in CI (the
// store for several machines the engine is made for), else a SQLite file.
func testDB(tb testing.TB) string {
	tb.Helper()
	if os.Getenv(pgtest.Env) != "" {
		name, u := pgtest.Schema(tb)
		tb.Logf("store: PostgreSQL, schema %s", name)
		return u
	}
	tb.Logf("store: SQLite (%s is not set)", pgtest.Env)
	return filepath.Join(tb.TempDir(), "pool.db")
}

// openDB opens the store at db (a PostgreSQL URL or a SQLite file).
func openDB(db string) (session.Store, error) {
	if postgres.IsURL(db) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		return postgres.Open(ctx, db, postgres.Options{})
	}
	return sqlite.Open(db, sqlite.Options{})
}

// openTestDB opens db for the test, closed when it ends.
func openTestDB(tb testing.TB, db string) session.Store {
	tb.Helper()
	st, err := openDB(db)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { st.Close() })
	return st
}

var cli struct {
	once sync.Once
	path string
	err  error
	out  []byte
}

// cliBinary builds cmd/agentpool-full (the CLI with the worker) once per
// test binary (quick once the build cache holds it), for the checks that
// read the store from another process; TestMain removes it.
func cliBinary(tb testing.TB) string {
	tb.Helper()
	cli.once.Do(func() {
		dir, err := os.MkdirTemp("", "agentpool-cli-")
		if err != nil {
			cli.err = err
			return
		}
		cli.path = filepath.Join(dir, "agentpool")
		goCmd, err := exec.LookPath("go")
		if err != nil {
			cli.err = err
			return
		}
		args := []string{"build", "-o", cli.path}
		if raceEnabled {
			// The packages go test -race compiled: a link, not a second
			// full compile of the CLI's dependencies.
			args = append(args, "-race")
		}
		cmd := exec.Command(goCmd, append(args, "github.com/agentpool/agentpool/cmd/agentpool-full")...)
		cli.out, cli.err = cmd.CombinedOutput()
	})
	if cli.err != nil {
		tb.Fatalf("building cmd/agentpool-full: %v\n%s", cli.err, cli.out)
	}
	return cli.path
}
