package postgres_test

import (
	"context"
	"net"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentpool/agentpool/internal/pgtest"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/session/postgres"
)

// Opening a schema again, or from several stores at once, migrates it
// once and keeps what it holds.
func TestMigrationsIdempotent(t *testing.T) {
	name, _ := pgtest.Schema(t)
	ctx := context.Background()
	var wg sync.WaitGroup
	stores := make([]*postgres.Store, 4)
	errs := make([]error, len(stores))
	for i := range stores {
		wg.Go(func() {
			stores[i], errs[i] = postgres.Open(ctx, pgtest.URL(t), postgres.Options{Schema: name})
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("concurrent open %d: %v", i, err)
		}
	}
	if err := stores[0].CreateSession(ctx, session.Session{ID: "ses_kept"}); err != nil {
		t.Fatal(err)
	}
	for _, st := range stores {
		st.Close()
	}
	st := openIn(t, name)
	if _, err := st.GetSession(ctx, "ses_kept"); err != nil {
		t.Fatalf("after opening again: %v", err)
	}
	var n, v int
	pool := pgtest.Conn(t)
	if err := pool.QueryRow(ctx, `SELECT count(*), max(version) FROM `+name+`.schema_migrations`).Scan(&n, &v); err != nil {
		t.Fatal(err)
	}
	if n != postgres.SchemaVersion() || v != postgres.SchemaVersion() {
		t.Errorf("schema_migrations has %d rows up to %d, want %d", n, v, postgres.SchemaVersion())
	}
	// A schema newer than the code is refused.
	if _, err := pool.Exec(ctx, `INSERT INTO `+name+`.schema_migrations (version, name) VALUES (999, 'future')`); err != nil {
		t.Fatal(err)
	}
	if _, err := postgres.Open(ctx, pgtest.URL(t), postgres.Options{Schema: name}); err == nil || !strings.Contains(err.Error(), "newer than this program") {
		t.Errorf("Open of a newer schema = %v", err)
	}
}

// A bad URL, or a server that is not there, is a clear error at once;
// the password is in no error.
func TestOpenErrors(t *testing.T) {
	ctx := context.Background()
	cases := []struct{ url, want string }{
		{"mysql://u:s3cret-pw@127.0.0.1/db", "not a postgres:// or postgresql:// URL"},
		{"postgres://u:s3cret-pw@127.0.0.1:1/db?connect_timeout=abc", "bad URL"},
		{"postgres://u:s3cret-pw@127.0.0.1:1/db", "connect"},       // nothing listens on port 1
		{"postgresql://u:s3cret-pw@127.0.0.1:1/db", "127.0.0.1:1"}, // the address is named
	}
	for _, c := range cases {
		start := time.Now()
		st, err := postgres.Open(ctx, c.url, postgres.Options{ConnectTimeout: 3 * time.Second})
		if err == nil {
			st.Close()
			t.Errorf("Open(%s) succeeded", c.url)
			continue
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("Open(%s) took %v", c.url, d)
		}
		t.Logf("Open(%s): %v", c.url, err)
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("Open(%s) = %q, want it to say %q", c.url, err, c.want)
		}
		if strings.Contains(err.Error(), "s3cret-pw") {
			t.Errorf("Open(%s) = %q: names the password", c.url, err)
		}
	}
	// A wrong password on the real server.
	u := pgtest.URL(t)
	bad := strings.Replace(u, ":"+passwordOf(t, u)+"@", ":wrong-s3cret@", 1)
	if _, err := postgres.Open(ctx, bad, postgres.Options{}); err == nil || strings.Contains(err.Error(), "wrong-s3cret") {
		t.Errorf("Open with a wrong password = %v", err)
	}
	if got, want := postgres.SafeURL("postgres://me:pw@h/db?password=pw2&sslmode=disable"), "postgres://me:xxxxx@h/db?password=xxxxx&sslmode=disable"; got != want {
		t.Errorf("SafeURL = %s, want %s", got, want)
	}
}

func passwordOf(t *testing.T, u string) string {
	p, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	pw, ok := p.User.Password()
	if !ok {
		t.Skip("the test server's URL has no password")
	}
	return pw
}

// A server that accepts connections and never answers (a hung server, a
// wrong port that happens to listen) fails Open within the connect
// timeout.
func TestOpenSilentServer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		var conns []net.Conn
		for {
			c, err := ln.Accept()
			if err != nil {
				for _, c := range conns {
					c.Close()
				}
				return
			}
			conns = append(conns, c) // read nothing, say nothing
		}
	}()
	start := time.Now()
	_, err = postgres.Open(context.Background(), "postgres://u:s3cret-pw@"+ln.Addr().String()+"/db?sslmode=disable", postgres.Options{ConnectTimeout: 500 * time.Millisecond})
	d := time.Since(start)
	ln.Close()
	<-done
	if err == nil {
		t.Fatal("Open of a silent server succeeded")
	}
	t.Logf("after %v: %v", d, err)
	if d > 10*time.Second || strings.Contains(err.Error(), "s3cret-pw") || !strings.Contains(err.Error(), "timeout") {
		t.Errorf("Open of a silent server: %v after %v", err, d)
	}
}
