package postgres

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentpool/agentpool/id"
	"github.com/agentpool/agentpool/session"
)

// Options tune a Store. The zero value is good.
type Options struct {
	// Logger receives warnings (a lost connection, a reconnect).
	Logger *slog.Logger
	// Schema is the PostgreSQL schema that holds the tables, created when
	// missing. Default: the connection's current schema (the first of its
	// search_path that exists, usually public).
	Schema string
	// MaxConns bounds the pool's connections (the owner connection and
	// the listener of SubscribeEvents come on top). Default 8.
	MaxConns int32
	// ConnectTimeout bounds each connection attempt when the URL does not
	// set connect_timeout. Default 10s.
	ConnectTimeout time.Duration
	// OwnerCheck is how often the store checks the connection that holds
	// its owner lock, and makes it again when it was lost. Default 5s.
	OwnerCheck time.Duration
	// CommitLatency, when set, is called for each AppendEvents call once
	// its events are committed, with the time since the call (what an
	// event waits until it is durable: its group commit's queue and round
	// trip). It runs on the committing goroutine: it must be quick and
	// must not call the store. For measurements (bench's
	// BenchmarkStoreLoad).
	CommitLatency func(time.Duration)
}

// Store is the PostgreSQL session.Store. Use Open.
type Store struct {
	pool     *pgxpool.Pool
	connCfg  *pgx.ConnConfig // for the owner and listener connections
	url      string          // SafeURL of the URL it was opened with
	password string          // redacted from errors
	schema   string
	channel  string // the NOTIFY channel of this schema
	log      *slog.Logger
	instance string // this store's id in the instances table
	host     string

	own       *owner        // the connection that holds this store's advisory lock
	ownerDone chan struct{} // closed when watchOwner returns

	appends       appender
	commitLatency func(time.Duration) // Options.CommitLatency
	notify        notifier

	mu     sync.Mutex
	closed bool
	// unreleased holds the sessions whose Release failed: their claims
	// have ended, their rows are deleted by the next Claim (claims.go).
	unreleased map[string]struct{}
	done       chan struct{} // closed by Close: background goroutines stop

	closeOnce sync.Once
	closeErr  error
}

var (
	_ session.Store         = (*Store)(nil)
	_ session.EventNotifier = (*Store)(nil)
)

// IsURL reports whether s is a PostgreSQL connection URL (postgres:// or
// postgresql://), the form of --db and storage.url that selects this store.
func IsURL(s string) bool {
	l := strings.ToLower(s)
	return strings.HasPrefix(l, "postgres://") || strings.HasPrefix(l, "postgresql://")
}

// SafeURL returns a connection URL fit for messages and logs: the password
// and the values of query parameters that may carry secrets are replaced.
func SafeURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "[unparsable PostgreSQL URL]"
	}
	if u.User != nil {
		if _, has := u.User.Password(); has {
			u.User = url.UserPassword(u.User.Username(), "xxxxx")
		}
	}
	if u.RawQuery != "" {
		q := u.Query()
		for k := range q {
			switch strings.ToLower(k) {
			case "password", "sslpassword", "sslkey", "passfile":
				q[k] = []string{"xxxxx"}
			}
		}
		u.RawQuery = q.Encode()
	}
	return u.String()
}

// Open connects to the database at url (postgres://user:pass@host:port/db?...,
// every parameter libpq and pgx know), migrates the schema, and takes this
// store's owner lock. An unreachable server fails within the connect
// timeout. No error names the password.
func Open(ctx context.Context, rawURL string, opts Options) (*Store, error) {
	safe := SafeURL(rawURL)
	if !IsURL(rawURL) {
		return nil, fmt.Errorf("postgres: %s is not a postgres:// or postgresql:// URL", safe)
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.MaxConns <= 0 {
		opts.MaxConns = 8
	}
	if opts.ConnectTimeout <= 0 {
		opts.ConnectTimeout = 10 * time.Second
	}
	if opts.OwnerCheck <= 0 {
		opts.OwnerCheck = 5 * time.Second
	}
	cfg, err := pgxpool.ParseConfig(rawURL)
	if err != nil {
		// pgx's parse errors redact the password; say where anyway.
		return nil, fmt.Errorf("postgres: bad URL %s: %w", safe, errors.Unwrap(err))
	}
	password := cfg.ConnConfig.Password
	fail := func(err error) (*Store, error) {
		return nil, fmt.Errorf("postgres: open %s: %w", safe, redact(err, password))
	}
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = opts.ConnectTimeout
	}
	cfg.MaxConns = opts.MaxConns
	if opts.Schema != "" {
		// Every connection finds the tables in the schema; pg_catalog
		// stays first implicitly.
		cfg.ConnConfig.RuntimeParams["search_path"] = pgx.Identifier{opts.Schema}.Sanitize()
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return fail(err)
	}
	pctx, cancel := context.WithTimeout(ctx, cfg.ConnConfig.ConnectTimeout+5*time.Second)
	defer cancel()
	schema := opts.Schema
	if schema == "" {
		var cur *string
		if err := pool.QueryRow(pctx, `SELECT current_schema()`).Scan(&cur); err != nil {
			pool.Close()
			return fail(err)
		}
		if cur == nil {
			pool.Close()
			return fail(errors.New("the connection's search_path names no existing schema: set one (search_path=NAME in the URL)"))
		} else {
			schema = *cur
		}
	}
	if err := migrate(pctx, pool, schema, migrations()); err != nil {
		pool.Close()
		return fail(err)
	}
	s := &Store{
		pool: pool, connCfg: cfg.ConnConfig, url: safe, password: password,
		schema: schema, channel: channelName(schema), log: opts.Logger,
		instance: id.Ascending("ins"), host: session.ThisProcess().Host,
		done: make(chan struct{}), unreleased: map[string]struct{}{},
		commitLatency: opts.CommitLatency,
	}
	s.appends.init()
	s.notify.init()
	if s.own, err = s.register(pctx); err != nil {
		pool.Close()
		return fail(err)
	}
	s.ownerDone = make(chan struct{})
	go s.watchOwner(opts.OwnerCheck)
	return s, nil
}

// channelName is the NOTIFY channel of the stores of schema: channel
// names are database-wide, and at most 63 bytes.
func channelName(schema string) string {
	ch := "agentpool_events:" + schema
	if len(ch) > 63 {
		h := fnv.New64a()
		h.Write([]byte(schema))
		ch = fmt.Sprintf("agentpool_events:%x", h.Sum64())
	}
	return ch
}

// redact replaces the password in an error's text.
func redact(err error, password string) error {
	if err == nil || password == "" || !strings.Contains(err.Error(), password) {
		return err
	}
	return errors.New(strings.ReplaceAll(err.Error(), password, "xxxxx"))
}

// URL returns the URL the store was opened with, password hidden.
func (s *Store) URL() string { return s.url }

// Schema returns the schema that holds the store's tables.
func (s *Store) Schema() string { return s.schema }

func (s *Store) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// wrap gives an error of the database the store's URL, password hidden.
func (s *Store) wrap(err error) error {
	if err == nil {
		return nil
	}
	if s.isClosed() {
		return session.ErrClosed
	}
	return fmt.Errorf("postgres %s: %w", s.url, redact(err, s.password))
}

// account counts the write of n items that returned *err in the run's
// account of lost writes (session.ReportWrite), naming this store: every
// write is committed before its call returns, so its error is all there
// is to report.
func (s *Store) account(ctx context.Context, n int, err *error) {
	if *err == nil || session.WritesOf(ctx) == nil {
		return
	}
	e := *err
	if errors.Is(e, session.ErrClosed) {
		e = fmt.Errorf("postgres %s: %w", s.url, e)
	}
	session.ReportWrite(ctx, n, e)
}

// Flush implements session.Store. Every write is committed before its
// call returns, so there is nothing to wait for.
func (s *Store) Flush(ctx context.Context) error {
	if s.isClosed() {
		return session.ErrClosed
	}
	return nil
}

// Close implements session.Store: the listener stops (subscribers'
// channels close), this store's claims and row are deleted, its owner lock
// is released and the pool closed. Closing twice is a no-op.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.closed = true
		s.mu.Unlock()
		close(s.done)
		<-s.ownerDone
		s.notify.stop()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		var errs []error
		if _, err := s.pool.Exec(ctx, `DELETE FROM claims WHERE instance = $1`, s.instance); err != nil {
			errs = append(errs, err)
		} else if _, err := s.pool.Exec(ctx, `DELETE FROM instances WHERE id = $1`, s.instance); err != nil {
			errs = append(errs, err)
		}
		s.own.close()
		s.pool.Close()
		if err := errors.Join(errs...); err != nil {
			s.closeErr = fmt.Errorf("postgres %s: close: %w", s.url, redact(err, s.password))
		}
	})
	return s.closeErr
}

// Error codes of PostgreSQL.
const (
	codeUniqueViolation     = "23505"
	codeForeignKeyViolation = "23503"
)

func pgCode(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

func notFound(id string) error { return fmt.Errorf("%w: %s", session.ErrNotFound, id) }

// OwnerBackendPID is the server process of the connection that holds this
// store's owner lock (for tests and operators: ending it, with
// pg_terminate_backend, makes the store's claims stop counting).
func (s *Store) OwnerBackendPID() uint32 { return s.own.backendPID() }
