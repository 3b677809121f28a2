// Package pgtest gives tests a PostgreSQL database to work in: the server
// named by AGENTPOOL_TEST_POSTGRES (a postgres:// URL; `make test-go` sets
// it from tests/pg/start.sh), and a fresh schema per test, dropped when
// the test ends, so that tests run in parallel and leave nothing behind.
//
// Without the variable a test is skipped with a message that says how to
// run it, except under CI=true, where it fails: CI never skips silently.
package pgtest

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Env is the variable that names the test server.
const Env = "AGENTPOOL_TEST_POSTGRES"

// URL returns the test server's URL, or skips (fails under CI=true) when
// it is not set.
func URL(t testing.TB) string {
	t.Helper()
	u := os.Getenv(Env)
	if u == "" {
		msg := Env + " is not set: run `make test-go`, or `export " + Env + "=$(tests/pg/start.sh)` and go test again"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return u
}

var seq atomic.Int64

// Schema creates a new, empty schema on the test server and returns its
// name and a URL whose connections use it (search_path). The schema and
// everything in it are dropped when the test ends.
func Schema(t testing.TB) (name, schemaURL string) {
	t.Helper()
	base := URL(t)
	name = fmt.Sprintf("t_%d_%d_%d", os.Getpid(), time.Now().UnixNano()%1e9, seq.Add(1))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatalf("pgtest: connect to %s: %v", Env, err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, `CREATE SCHEMA `+pgx.Identifier{name}.Sanitize()); err != nil {
		t.Fatalf("pgtest: create schema: %v", err)
	}
	t.Cleanup(func() { Drop(t, name) })
	return name, WithParam(base, "search_path", name)
}

// Drop drops a schema of the test server with everything in it.
func Drop(t testing.TB, name string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, URL(t))
	if err != nil {
		t.Errorf("pgtest: drop schema %s: %v", name, err)
		return
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, `DROP SCHEMA IF EXISTS `+pgx.Identifier{name}.Sanitize()+` CASCADE`); err != nil {
		t.Errorf("pgtest: drop schema %s: %v", name, err)
	}
}

// WithParam returns u with the query parameter k set to v.
func WithParam(u, k, v string) string {
	p, err := url.Parse(u)
	if err != nil {
		return u
	}
	q := p.Query()
	q.Set(k, v)
	p.RawQuery = q.Encode()
	return p.String()
}

// Exec runs SQL statements on the test server (outside any test schema).
func Exec(t testing.TB, sql string, args ...any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, URL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, sql, args...); err != nil && !strings.Contains(sql, "IF EXISTS") {
		t.Fatalf("pgtest: %s: %v", sql, err)
	}
}

// Conn returns a connection to the test server, closed when the test ends.
func Conn(t testing.TB) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, URL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}
