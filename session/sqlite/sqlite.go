package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	_ "modernc.org/sqlite" // the "sqlite" database/sql driver

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/id"
	"github.com/agentpool/agentpool/model"
	"github.com/agentpool/agentpool/session"
)

// Options tune a Store. The zero value is good.
type Options struct {
	// Logger receives warnings (a write that could not be committed).
	Logger *slog.Logger
	// BatchSize is the most queued writes (events, messages) committed in
	// one transaction. Default 2048.
	BatchSize int
	// Linger is how long the writer waits for a batch to fill before it
	// commits a partial one, and how long its transaction may hold writes
	// answered before their commit (doc.go, "Deferred commits"). Default
	// 2ms; negative means never wait and commit every write at once.
	Linger time.Duration
	// MaxPending bounds the writes queued and not yet committed; appenders
	// wait (nothing is dropped) when it is reached. Default 65536.
	MaxPending int
	// BusyTimeout is how long a connection waits for a lock held by
	// another process. Default 10s.
	BusyTimeout time.Duration
	// Lease is how long another process takes this store for alive after
	// its last heartbeat (renewed every Lease/3) when it cannot look at
	// the store's lock file. Default DefaultLease.
	Lease time.Duration
	// CommitLatency, when set, is called for each AppendEvents call once
	// its events are committed, with the time since the call (what an
	// event waits until it is durable). It runs on the committing
	// goroutine: it must be quick and must not call the store. For
	// measurements (bench's BenchmarkStoreLoad).
	CommitLatency func(time.Duration)
}

// Store is the SQLite session.Store. Use Open.
type Store struct {
	db        *sql.DB
	path      string
	memory    bool // ":memory:": private to this store
	log       *slog.Logger
	opts      Options
	instance  string   // this store's id in the instances table
	host      string   // the host name
	boot      string   // the boot id of this machine, "" when unknown
	lock      *os.File // held while the store is open (owner.go); nil without one
	recovered []string

	beatStop, beatDone chan struct{} // the heartbeat goroutine; nil for ":memory:"
	ckptStop, ckptDone chan struct{} // the checkpointer goroutine; nil for ":memory:"
	commits            atomic.Uint64 // transactions with writes committed

	// mu guards the fields from here to wake (the fields after "Owned by
	// the holder of the writer's turn" are not under it). One lock over
	// the queue and the two caches (pks, recs): a write is checked against
	// pks and queued in one step, the record cache answers only while
	// txOpen says a transaction is open, and every write goes through the
	// one writer anyway. It is held for that bookkeeping only: the
	// writer's turn (writing) is taken under it, and the SQL of a commit
	// runs without it.
	mu        sync.Mutex
	space     *sync.Cond // signalled when the queue shrinks or the store closes
	queue     []*op
	queued    int              // writes (items) in queue
	pending   int              // async ops accepted and not yet committed
	syncOps   bool             // queue holds an op a caller waits for
	writing   bool             // a commit is under way (the writer's turn is taken)
	stopped   bool             // the stop op was committed: the writer goroutine exits
	pks       map[string]int64 // sessions known to exist: id -> pk
	deleteGen uint64           // bumped after each committed delete
	closed    bool
	werr      error                      // first write error that could not be committed
	txOpen    bool                       // a transaction is open (tx.go): its writes are not committed yet
	txStart   time.Time                  // when it began
	recs      map[string]session.Session // the record cache (cache.go)

	wake   chan struct{}
	urgent chan struct{}
	done   chan struct{}

	closeOnce sync.Once
	closeErr  error

	// Owned by the holder of the writer's turn (writing).
	seqs  map[int64]int64 // last seq of each session's log, by session pk
	stmts *statements
	rows  []eventRow // event rows waiting for a multi-row insert
	mrows []msgRow   // messages likewise (rows.go)
	prows []partRow  // their parts, once the messages are in
	args  []any      // their arguments
	// The open transaction (tx.go).
	tx        *sql.Tx
	txSt      *txStatements
	txOps     []*op            // the ops applied in it, in order (replayed if it fails)
	txItems   int              // their writes
	txErr     error            // the first failure in it
	txCreated map[string]int64 // the sessions created in it: id -> pk
	txClaims  map[string]int64 // the claims taken in it, rows not written yet: id -> time
	// unreleased holds the sessions whose release failed to commit: their
	// claims have ended, their rows are deleted by a later commit
	// (claims.go); txReleased, those the open transaction deleted.
	unreleased map[string]struct{}
	txReleased map[string]struct{}
	wconn      *sql.Conn // the writer's connection (nil for ":memory:", which has one)
	dataVer    int64     // its PRAGMA data_version after the last transaction
}

var (
	_ session.Store   = (*Store)(nil)
	_ session.Exister = (*Store)(nil)
)

// Open opens (creating it when missing) the database at path, or a private
// in-memory database for ":memory:". It migrates the schema, recovers the
// sessions of dead processes and starts the writer. The directory of path
// must exist.
func Open(path string, opts Options) (*Store, error) {
	if path == "" {
		return nil, errors.New("sqlite: empty database path")
	}
	if strings.ContainsRune(path, '?') {
		return nil, fmt.Errorf("sqlite: database path %q must not contain '?'", path)
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.BatchSize <= 0 {
		opts.BatchSize = 2048
	}
	if opts.Linger == 0 {
		opts.Linger = 2 * time.Millisecond
	}
	if opts.MaxPending <= 0 {
		opts.MaxPending = 65536
	}
	if opts.MaxPending < opts.BatchSize {
		opts.MaxPending = opts.BatchSize
	}
	if opts.BusyTimeout <= 0 {
		opts.BusyTimeout = 10 * time.Second
	}
	if opts.Lease <= 0 {
		opts.Lease = DefaultLease
	}
	memory := path == ":memory:"
	dsn := fmt.Sprintf("%s?_pragma=busy_timeout(%d)&_pragma=foreign_keys(1)&_txlock=immediate", path, opts.BusyTimeout.Milliseconds())
	if !memory {
		// wal_autocheckpoint(0): the checkpointer goroutine checkpoints
		// (checkpoint.go), not the commit that crosses 1,000 pages.
		dsn += "&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_pragma=wal_autocheckpoint(0)"
	}
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	if memory {
		// Each connection to ":memory:" is a database of its own: keep one.
		db.SetMaxOpenConns(1)
		db.SetMaxIdleConns(1)
	} else {
		n := max(4, runtime.GOMAXPROCS(0)+1)
		db.SetMaxOpenConns(n)
		db.SetMaxIdleConns(n)
	}
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)
	ctx := context.Background()
	fail := func(err error) (*Store, error) {
		db.Close()
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	if err := db.PingContext(ctx); err != nil {
		return fail(err)
	}
	if err := migrate(ctx, db, migrations()); err != nil {
		return fail(err)
	}
	host, _ := os.Hostname()
	s := &Store{
		db: db, path: path, memory: memory, log: opts.Logger, opts: opts,
		instance: id.Ascending("ins"), host: host, boot: bootID(),
		pks:    map[string]int64{},
		wake:   make(chan struct{}, 1),
		urgent: make(chan struct{}, 1),
		done:   make(chan struct{}),
		seqs:   map[int64]int64{},

		txCreated:  map[string]int64{},
		txClaims:   map[string]int64{},
		unreleased: map[string]struct{}{},
		txReleased: map[string]struct{}{},
		recs:       map[string]session.Session{},
	}
	s.space = sync.NewCond(&s.mu)
	fail = func(err error) (*Store, error) {
		s.unlock()
		db.Close()
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	taken, err := s.register(ctx)
	if err != nil {
		return fail(err)
	}
	if s.stmts, err = prepare(ctx, db); err != nil {
		return fail(err)
	}
	if !memory {
		// One connection for the writer: its data_version tells the
		// commits of other connections (cache.go).
		if s.wconn, err = db.Conn(ctx); err != nil {
			s.stmts.close()
			return fail(err)
		}
	}
	go s.run()
	if !memory {
		s.beatStop, s.beatDone = make(chan struct{}), make(chan struct{})
		go s.heartbeat(s.beatStop, s.beatDone)
		s.ckptStop, s.ckptDone = make(chan struct{}), make(chan struct{})
		go s.checkpointer(s.ckptStop, s.ckptDone)
	}
	if len(taken) > 0 {
		waiting := s.closeAdopted(ctx, taken)
		for _, a := range taken {
			if !slices.Contains(waiting, a.id) {
				s.recovered = append(s.recovered, a.id)
			}
		}
		logAdopted(s.log, path, len(taken), len(waiting))
	}
	return s, nil
}

// logAdopted says what became of the sessions of dead processes.
func logAdopted(log *slog.Logger, path string, taken, waiting int) {
	if n := taken - waiting; n > 0 {
		log.Warn("session store: sessions of a process that is gone marked interrupted", "db", path, "sessions", n)
	}
	if waiting > 0 {
		log.Warn("session store: sessions of a process that is gone left running: a tool call in their tree waits for an approval", "db", path, "sessions", waiting)
	}
}

// unlock lets go of this store's lock file and removes it.
func (s *Store) unlock() {
	if s.lock != nil {
		os.Remove(s.lock.Name())
		s.releaseLock()
	}
}

// releaseLock lets go of this store's lock file and leaves it: free, it
// says that this store is dead.
func (s *Store) releaseLock() {
	if s.lock != nil {
		s.lock.Close()
		s.lock = nil
	}
}

// Path returns the path the store was opened with.
func (s *Store) Path() string { return s.path }

// Recovered lists the sessions that Open found running for a process that
// is gone, closed (session.CloseInterrupted) and marked interrupted (not
// those it left running because a tool call of their tree waits for an
// approval: session.FindWaiting).
func (s *Store) Recovered() []string { return append([]string(nil), s.recovered...) }

// ---- encoding ----

func unixNano(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func fromUnixNano(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n)
}

const sessionColumns = `id, parent_id, depth, agent_name, source_type, title, status, stop_reason,
	created_at, updated_at, usage, cost, total_usage, total_cost, duration_ms, metadata`

type scanner interface{ Scan(dest ...any) error }

func scanSession(r scanner) (session.Session, error) {
	var (
		s                   session.Session
		parent, meta        sql.NullString
		created, updated    int64
		usage, totalUsage   string
		status              string
		agent, source, stop string
	)
	err := r.Scan(&s.ID, &parent, &s.Depth, &agent, &source, &s.Title, &status, &stop,
		&created, &updated, &usage, &s.Cost, &totalUsage, &s.TotalCost, &s.DurationMS, &meta)
	if err != nil {
		return s, err
	}
	s.ParentID, s.AgentName, s.SourceType, s.Status, s.StopReason = parent.String, agent, event.SourceType(source), session.Status(status), event.StopReason(stop)
	s.CreatedAt, s.UpdatedAt = fromUnixNano(created), fromUnixNano(updated)
	if err := json.Unmarshal([]byte(usage), &s.Usage); err != nil {
		return s, fmt.Errorf("session %s: usage: %w", s.ID, err)
	}
	if err := json.Unmarshal([]byte(totalUsage), &s.TotalUsage); err != nil {
		return s, fmt.Errorf("session %s: total_usage: %w", s.ID, err)
	}
	if meta.Valid && meta.String != "" && meta.String != "null" {
		if err := json.Unmarshal([]byte(meta.String), &s.Metadata); err != nil {
			return s, fmt.Errorf("session %s: metadata: %w", s.ID, err)
		}
	}
	return s, nil
}

// sessionArgs are the values of the columns after id and parent_id, in
// sessionColumns order.
func sessionArgs(s session.Session) ([]any, error) {
	usage, err := json.Marshal(s.Usage)
	if err != nil {
		return nil, err
	}
	total, err := json.Marshal(s.TotalUsage)
	if err != nil {
		return nil, err
	}
	var meta any
	if s.Metadata != nil {
		b, err := json.Marshal(s.Metadata)
		if err != nil {
			return nil, fmt.Errorf("metadata: %w", err)
		}
		meta = string(b)
	}
	return []any{s.Depth, s.AgentName, string(s.SourceType), s.Title, string(s.Status), string(s.StopReason),
		unixNano(s.CreatedAt), unixNano(s.UpdatedAt), string(usage), s.Cost, string(total), s.TotalCost, s.DurationMS, meta}, nil
}

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func notFound(id string) error { return fmt.Errorf("%w: %s", session.ErrNotFound, id) }

// ---- reads ----

// GetSession implements session.Store.
func (s *Store) GetSession(ctx context.Context, id string) (session.Session, error) {
	s.mu.Lock()
	closed, open := s.closed, s.txOpen
	if closed {
		s.mu.Unlock()
		return session.Session{}, session.ErrClosed
	}
	if rec, ok := s.cachedRecord(id); ok {
		s.mu.Unlock()
		return rec, nil
	}
	s.mu.Unlock()
	if open {
		// Read in the open transaction, which holds writes not committed
		// yet (read-your-writes).
		o := &op{kind: opGet, sid: id}
		err := s.call(ctx, o)
		if err != nil {
			return session.Session{}, err
		}
		return *o.rec, nil
	}
	sess, err := scanSession(s.stmts.getSession.QueryRowContext(ctx, id))
	if errors.Is(err, sql.ErrNoRows) {
		return session.Session{}, notFound(id)
	}
	return sess, err
}

// threadExpr is a session's AG-UI thread (session.MetaThread), as the
// index sessions_thread (migration 0005) holds it.
const threadExpr = `(metadata ->> '$.` + session.MetaThread + `')`

// ListSessions implements session.Store.
func (s *Store) ListSessions(ctx context.Context, opts session.ListOptions) ([]session.Session, error) {
	if err := s.settle(ctx); err != nil {
		return nil, err
	}
	q, args := listQuery(opts)
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []session.Session
	for rows.Next() {
		sess, err := scanSession(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, sess)
	}
	return out, rows.Err()
}

// listQuery is the query of ListSessions and its arguments.
func listQuery(opts session.ListOptions) (string, []any) {
	var (
		where []string
		args  []any
	)
	switch {
	case opts.ParentID != "":
		where = append(where, `parent_id = ?`)
		args = append(args, opts.ParentID)
	case opts.RootsOnly:
		where = append(where, `parent_id IS NULL`)
	}
	if opts.Thread != "" {
		// The expression of the index sessions_thread, word for word: the
		// planner uses an expression index only for the same expression.
		where = append(where, threadExpr+` = ?`)
		args = append(args, opts.Thread)
	}
	q := `SELECT ` + sessionColumns + ` FROM sessions`
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, ` AND `)
	}
	q += ` ORDER BY created_at DESC, id ASC`
	if opts.Limit > 0 {
		q += ` LIMIT ?`
		args = append(args, opts.Limit)
	}
	return q, args
}

// lookup returns the pk of a session, or 0 when there is none.
func (s *Store) lookup(ctx context.Context, id string) (int64, error) {
	var pk int64
	err := s.stmts.sessionPK.QueryRowContext(ctx, id).Scan(&pk)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	return pk, err
}

// Exists implements session.Exister. A session this store created, or
// already found, is known to exist without a read until this store
// deletes it (the cache that appends use; a session another process
// deleted meanwhile still counts, as it does for an append, whose rows are
// then dropped with a warning).
func (s *Store) Exists(ctx context.Context, id string) (bool, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return false, session.ErrClosed
	}
	_, ok := s.pks[id]
	gen := s.deleteGen
	s.mu.Unlock()
	if ok {
		return true, nil
	}
	pk, err := s.lookup(ctx, id)
	if err != nil || pk == 0 {
		return false, err
	}
	s.mu.Lock()
	if s.deleteGen == gen {
		s.remember(id, pk)
	}
	s.mu.Unlock()
	return true, nil
}

func (s *Store) exists(ctx context.Context, id string) (bool, error) {
	pk, err := s.lookup(ctx, id)
	return pk != 0, err
}

// settle waits until the writes queued or applied so far are committed,
// so that a read on another connection sees them.
func (s *Store) settle(ctx context.Context) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return session.ErrClosed
	}
	n, open := s.pending, s.txOpen
	s.mu.Unlock()
	if n == 0 && !open {
		return nil
	}
	return s.barrier(ctx)
}

// Messages implements session.Store.
func (s *Store) Messages(ctx context.Context, sessionID string) ([]session.Message, error) {
	if err := s.settle(ctx); err != nil {
		return nil, err
	}
	rows, err := s.db.QueryContext(ctx, `SELECT m.seq, m.id, m.agent_name, m.role, m.synthetic, m.created_at,
			p.kind, p.text, p.tool_call_id, p.tool_name, p.args, p.is_error
		FROM sessions s JOIN messages m ON m.session_pk = s.pk LEFT JOIN parts p ON p.message_seq = m.seq
		WHERE s.id = ? ORDER BY m.seq, p.idx`, sessionID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var (
		out  []session.Message
		last int64 = -1
	)
	for rows.Next() {
		var (
			seq, created                   int64
			mid, agent, role               string
			synthetic                      bool
			kind, text, callID, tool, args sql.NullString
			isError                        sql.NullBool
		)
		if err := rows.Scan(&seq, &mid, &agent, &role, &synthetic, &created, &kind, &text, &callID, &tool, &args, &isError); err != nil {
			return nil, err
		}
		if seq != last {
			last = seq
			out = append(out, session.Message{ID: mid, SessionID: sessionID, AgentName: agent, CreatedAt: fromUnixNano(created),
				Message: model.Message{Role: model.Role(role), Synthetic: synthetic, Parts: []model.Part{}}})
		}
		if kind.Valid {
			p := model.Part{Kind: model.PartKind(kind.String), Text: text.String, ToolCallID: callID.String, ToolName: tool.String, IsError: isError.Bool}
			if args.Valid {
				p.Args = json.RawMessage(args.String)
			}
			m := &out[len(out)-1]
			m.Parts = append(m.Parts, p)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		if ok, err := s.exists(ctx, sessionID); err != nil {
			return nil, err
		} else if !ok {
			return nil, notFound(sessionID)
		}
	}
	return out, nil
}

// Events implements session.Store.
func (s *Store) Events(ctx context.Context, sessionID string, afterSeq int64) ([]session.Record, error) {
	if err := s.settle(ctx); err != nil {
		return nil, err
	}
	rows, err := s.db.QueryContext(ctx, `SELECT e.id, e.seq, e.time, e.data FROM sessions s JOIN events e ON e.session_pk = s.pk
		WHERE s.id = ? AND e.seq > ? ORDER BY e.seq`, sessionID, afterSeq)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []session.Record
	for rows.Next() {
		var (
			r    = session.Record{SessionID: sessionID}
			t    int64
			data []byte
		)
		if err := rows.Scan(&r.GlobalSeq, &r.Seq, &t, &data); err != nil {
			return nil, err
		}
		r.Time = fromUnixNano(t)
		if r.Event, err = event.Decode(data); err != nil {
			return nil, fmt.Errorf("session %s event %d: %w", sessionID, r.Seq, err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		if ok, err := s.exists(ctx, sessionID); err != nil {
			return nil, err
		} else if !ok {
			return nil, notFound(sessionID)
		}
	}
	return out, nil
}
