package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	sqlitedrv "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/session"
)

// maxKnown bounds the cache of session ids known to exist.
const maxKnown = 1 << 17

type opKind uint8

const (
	opEvents opKind = iota
	opMessages
	opCreate
	opUpdate
	opDelete
	opBarrier
	opStop
)

// op is one queued write. Events and messages are async (no done
// channel); the others have a caller waiting on done.
type op struct {
	kind opKind
	sid  string
	pk   int64 // events, messages: the session's pk
	at   int64 // enqueue time, Unix ns
	evs  []encEvent
	msgs []encMessage
	args []any // create: the session's column values after id and parent_id
	pid  string
	fn   func(*session.Session)
	done chan result

	res     result
	newPK   int64    // create: the pk given to the session
	deleted []string // delete: the ids removed
	delPKs  []int64  // delete: their pks
}

// eventRow is one row of the events table waiting to be inserted.
type eventRow struct {
	pk, seq, at int64
	kind, data  string
}

type result struct {
	err      error
	panicked bool
	panicV   any
}

type encEvent struct {
	kind string
	data string
}

type encMessage struct {
	id, agent, role string
	synthetic       bool
	created         int64
	parts           []encPart
}

type encPart struct {
	kind, text, callID, tool string
	args                     any // nil or the JSON text
	isError                  bool
}

func (o *op) items() int {
	switch o.kind {
	case opEvents:
		return len(o.evs)
	case opMessages:
		return len(o.msgs)
	}
	return 1
}

func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// ---- the write API ----

// CreateSession implements session.Store. It returns once the session is
// committed.
func (s *Store) CreateSession(ctx context.Context, sess session.Session) error {
	if sess.ID == "" {
		return errors.New("sqlite: session id is empty")
	}
	now := time.Now()
	if sess.CreatedAt.IsZero() {
		sess.CreatedAt = now
	}
	if sess.UpdatedAt.IsZero() {
		sess.UpdatedAt = sess.CreatedAt
	}
	args, err := sessionArgs(sess)
	if err != nil {
		return fmt.Errorf("sqlite: session %s: %w", sess.ID, err)
	}
	return s.call(ctx, &op{kind: opCreate, sid: sess.ID, pid: sess.ParentID, args: args})
}

// UpdateSession implements session.Store. fn runs on the writer goroutine
// inside the transaction; a panic in fn is raised again in the caller.
func (s *Store) UpdateSession(ctx context.Context, id string, fn func(*session.Session)) error {
	return s.call(ctx, &op{kind: opUpdate, sid: id, fn: fn})
}

// DeleteSession implements session.Store.
func (s *Store) DeleteSession(ctx context.Context, id string) error {
	return s.call(ctx, &op{kind: opDelete, sid: id})
}

// AppendEvents implements session.Store. The events are encoded at once and
// committed by the writer; see Flush.
func (s *Store) AppendEvents(ctx context.Context, sessionID string, evs ...event.Event) error {
	o := &op{kind: opEvents, sid: sessionID, at: time.Now().UnixNano(), evs: make([]encEvent, len(evs))}
	for i, e := range evs {
		b, err := event.Marshal(e)
		if err != nil {
			return fmt.Errorf("sqlite: session %s: %w", sessionID, err)
		}
		o.evs[i] = encEvent{kind: string(e.Kind()), data: string(b)}
	}
	return s.enqueueAsync(ctx, o)
}

// AppendMessages implements session.Store.
func (s *Store) AppendMessages(ctx context.Context, sessionID string, msgs ...session.Message) error {
	o := &op{kind: opMessages, sid: sessionID, msgs: make([]encMessage, len(msgs))}
	for i, m := range msgs {
		em := encMessage{id: m.ID, agent: m.AgentName, role: string(m.Role), synthetic: m.Synthetic, created: unixNano(m.CreatedAt), parts: make([]encPart, len(m.Parts))}
		for k, p := range m.Parts {
			ep := encPart{kind: string(p.Kind), text: p.Text, callID: p.ToolCallID, tool: p.ToolName, isError: p.IsError}
			if p.Args != nil {
				ep.args = string(p.Args)
			}
			em.parts[k] = ep
		}
		o.msgs[i] = em
	}
	return s.enqueueAsync(ctx, o)
}

// Flush implements session.Store: it returns once every write accepted
// before the call is committed, with the first write error, if any, that
// could not be committed since the store was opened.
func (s *Store) Flush(ctx context.Context) error {
	if err := s.barrier(ctx); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.werr
}

// Close implements session.Store: it flushes, stops the writer and closes
// the database. Closing twice is a no-op.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		o := &op{kind: opStop, done: make(chan result, 1)}
		s.mu.Lock()
		s.closed = true
		s.queue = append(s.queue, o)
		s.syncOps = true
		s.space.Broadcast()
		s.mu.Unlock()
		signal(s.wake)
		signal(s.urgent)
		<-o.done
		<-s.done
		_, delErr := s.db.Exec(`DELETE FROM instances WHERE id = ?`, s.instance)
		s.stmts.close()
		s.mu.Lock()
		werr := s.werr
		s.mu.Unlock()
		s.closeErr = errors.Join(werr, delErr, s.db.Close())
	})
	return s.closeErr
}

// barrier waits for every op queued before it.
func (s *Store) barrier(ctx context.Context) error {
	return s.call(ctx, &op{kind: opBarrier})
}

// call queues a synchronous op and waits for its commit. A write (create,
// update, delete) is always waited for, so that the caller learns what
// happened to it; only a barrier gives up when ctx ends.
func (s *Store) call(ctx context.Context, o *op) error {
	o.done = make(chan result, 1)
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return session.ErrClosed
	}
	s.queue = append(s.queue, o)
	s.syncOps = true
	s.mu.Unlock()
	signal(s.wake)
	signal(s.urgent)
	var r result
	if o.kind == opBarrier {
		select {
		case r = <-o.done:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	} else {
		r = <-o.done
	}
	if r.panicked {
		panic(r.panicV)
	}
	return r.err
}

// enqueueAsync checks that the session exists, waits for room in the
// queue and queues o.
func (s *Store) enqueueAsync(ctx context.Context, o *op) error {
	items := o.items()
	s.mu.Lock()
	for {
		if s.closed {
			s.mu.Unlock()
			return session.ErrClosed
		}
		pk, ok := s.pks[o.sid]
		if !ok {
			gen := s.deleteGen
			s.mu.Unlock()
			pk, err := s.lookup(ctx, o.sid)
			if err != nil {
				return err
			}
			if pk == 0 {
				return notFound(o.sid)
			}
			s.mu.Lock()
			if s.deleteGen == gen {
				s.remember(o.sid, pk)
			}
			continue
		}
		if items > 0 && s.queued >= s.opts.MaxPending {
			s.space.Wait()
			continue
		}
		o.pk = pk
		break
	}
	if items == 0 {
		s.mu.Unlock()
		return nil
	}
	s.queue = append(s.queue, o)
	s.queued += items
	s.pending++
	urgent := s.queued >= s.opts.BatchSize
	s.mu.Unlock()
	signal(s.wake)
	if urgent {
		signal(s.urgent)
	}
	return nil
}

// remember records that a session exists; s.mu is held.
func (s *Store) remember(id string, pk int64) {
	if len(s.pks) >= maxKnown {
		clear(s.pks)
	}
	s.pks[id] = pk
}

// ---- the writer ----

func (s *Store) run() {
	defer close(s.done)
	for {
		<-s.wake
		s.mu.Lock()
		if len(s.queue) == 0 {
			s.mu.Unlock()
			continue
		}
		urgent := s.syncOps || s.queued >= s.opts.BatchSize
		s.mu.Unlock()
		if !urgent && s.opts.Linger > 0 {
			t := time.NewTimer(s.opts.Linger)
			select {
			case <-s.urgent:
			case <-t.C:
			}
			t.Stop()
		}
		s.mu.Lock()
		batch := s.queue
		s.queue = nil
		s.queued = 0
		s.syncOps = false
		s.space.Broadcast()
		s.mu.Unlock()
		if s.process(batch) {
			return
		}
	}
}

// process commits batch in chunks of at most BatchSize writes and reports
// whether it held the stop op.
func (s *Store) process(batch []*op) (stop bool) {
	start, items := 0, 0
	for i, o := range batch {
		n := o.items()
		if items > 0 && items+n > s.opts.BatchSize {
			s.commit(batch[start:i])
			start, items = i, 0
		}
		items += n
		if o.kind == opStop {
			stop = true
		}
	}
	s.commit(batch[start:])
	return stop
}

// commit applies ops in one transaction, retrying a failed commit, then
// answers the callers.
func (s *Store) commit(ops []*op) {
	writes := false
	for _, o := range ops {
		if o.kind != opBarrier && o.kind != opStop {
			writes = true
			break
		}
	}
	var err error
	if writes {
		for attempt := 0; ; attempt++ {
			if err = s.try(ops); err == nil {
				break
			}
			clear(s.seqs) // the cached sequence numbers may be ahead of the database
			if attempt == 4 {
				break
			}
			time.Sleep(time.Duration(10<<attempt) * time.Millisecond)
		}
	}
	lost := 0
	s.mu.Lock()
	if err != nil && s.werr == nil {
		s.werr = fmt.Errorf("sqlite: commit: %w", err)
	}
	for _, o := range ops {
		if err != nil && o.kind != opBarrier && o.kind != opStop {
			o.res = result{err: fmt.Errorf("sqlite: commit: %w", err)}
			if o.done == nil {
				lost += o.items()
			}
		}
		switch o.kind {
		case opEvents, opMessages:
			s.pending--
		case opCreate:
			if err == nil && o.res.err == nil {
				s.remember(o.sid, o.newPK)
			}
		case opDelete:
			if err == nil && o.res.err == nil {
				for _, id := range o.deleted {
					delete(s.pks, id)
				}
				for _, pk := range o.delPKs {
					delete(s.seqs, pk)
				}
				s.deleteGen++
			}
		}
	}
	s.mu.Unlock()
	if lost > 0 {
		s.log.Error("session store: writes could not be committed", "db", s.path, "writes", lost, "err", err)
	}
	for _, o := range ops {
		if o.done != nil {
			o.done <- o.res
		}
	}
}

// try runs ops in one transaction. The error is that of the transaction;
// an op's own failure (a missing session, for example) is in its res.
func (s *Store) try(ops []*op) error {
	ctx := context.Background()
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	st := s.stmts.in(tx)
	s.rows = s.rows[:0]
	for _, o := range ops {
		o.res, o.newPK, o.deleted, o.delPKs = result{}, 0, nil, nil
		if o.kind != opEvents {
			// Everything before o is written before o.
			if err := s.insertRows(ctx, st); err != nil {
				tx.Rollback()
				return err
			}
		}
		if err := s.apply(ctx, tx, st, o); err != nil {
			tx.Rollback()
			return err
		}
	}
	if err := s.insertRows(ctx, st); err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
}

func isForeignKey(err error) bool {
	var se *sqlitedrv.Error
	return errors.As(err, &se) && se.Code() == sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY
}

func (s *Store) apply(ctx context.Context, tx *sql.Tx, st *txStatements, o *op) error {
	switch o.kind {
	case opEvents:
		last, ok := s.seqs[o.pk]
		if !ok {
			if err := st.maxSeq.QueryRowContext(ctx, o.pk).Scan(&last); err != nil {
				return err
			}
		}
		for _, e := range o.evs {
			last++
			s.rows = append(s.rows, eventRow{pk: o.pk, seq: last, at: o.at, kind: e.kind, data: e.data})
		}
		s.seqs[o.pk] = last
	case opMessages:
		for _, m := range o.msgs {
			res, err := st.insMessage.ExecContext(ctx, m.id, o.pk, m.agent, m.role, m.synthetic, m.created)
			if err != nil {
				if isForeignKey(err) {
					s.log.Warn("session store: messages of a deleted session dropped", "session", o.sid, "messages", len(o.msgs))
					return nil
				}
				return err
			}
			seq, err := res.LastInsertId()
			if err != nil {
				return err
			}
			for i, p := range m.parts {
				if _, err := st.insPart.ExecContext(ctx, seq, i, p.kind, p.text, p.callID, p.tool, p.args, p.isError); err != nil {
					return err
				}
			}
		}
	case opCreate:
		var one int
		err := tx.QueryRowContext(ctx, `SELECT 1 FROM sessions WHERE id = ?`, o.sid).Scan(&one)
		switch {
		case err == nil:
			o.res.err = fmt.Errorf("%w: %s", session.ErrExists, o.sid)
			return nil
		case !errors.Is(err, sql.ErrNoRows):
			return err
		}
		if o.pid != "" {
			err := tx.QueryRowContext(ctx, `SELECT 1 FROM sessions WHERE id = ?`, o.pid).Scan(&one)
			switch {
			case errors.Is(err, sql.ErrNoRows):
				o.res.err = notFound(o.pid)
				return nil
			case err != nil:
				return err
			}
		}
		args := append([]any{o.sid, nullable(o.pid)}, o.args...)
		args = append(args, s.instance)
		res, err := tx.ExecContext(ctx, `INSERT INTO sessions (`+sessionColumns+`, owner) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, args...)
		if err != nil {
			return err
		}
		o.newPK, err = res.LastInsertId()
		return err
	case opUpdate:
		cur, err := scanSession(tx.QueryRowContext(ctx, `SELECT `+sessionColumns+` FROM sessions WHERE id = ?`, o.sid))
		if errors.Is(err, sql.ErrNoRows) {
			o.res.err = notFound(o.sid)
			return nil
		}
		if err != nil {
			return err
		}
		next := cur
		next.Metadata = session.CloneMetadata(cur.Metadata)
		if r := runUpdate(o.fn, &next); r.panicked {
			o.res = r
			return nil
		}
		next.ID, next.ParentID, next.Depth, next.CreatedAt = cur.ID, cur.ParentID, cur.Depth, cur.CreatedAt
		next.UpdatedAt = time.Now()
		if !next.UpdatedAt.After(cur.UpdatedAt) {
			next.UpdatedAt = cur.UpdatedAt.Add(time.Nanosecond)
		}
		args, err := sessionArgs(next)
		if err != nil {
			o.res.err = fmt.Errorf("sqlite: session %s: %w", o.sid, err)
			return nil
		}
		args = append(args, s.instance, o.sid)
		_, err = tx.ExecContext(ctx, `UPDATE sessions SET depth = ?, agent_name = ?, source_type = ?, title = ?, status = ?, stop_reason = ?,
			created_at = ?, updated_at = ?, usage = ?, cost = ?, total_usage = ?, total_cost = ?, duration_ms = ?, metadata = ?, owner = ?
			WHERE id = ?`, args...)
		return err
	case opDelete:
		rows, err := tx.QueryContext(ctx, `WITH RECURSIVE sub(id, pk) AS (
				SELECT id, pk FROM sessions WHERE id = ?
				UNION ALL SELECT s.id, s.pk FROM sessions s JOIN sub ON s.parent_id = sub.id)
			SELECT id, pk FROM sub`, o.sid)
		if err != nil {
			return err
		}
		var (
			ids []string
			pks []int64
		)
		for rows.Next() {
			var id string
			var pk int64
			if err := rows.Scan(&id, &pk); err != nil {
				rows.Close()
				return err
			}
			ids = append(ids, id)
			pks = append(pks, pk)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		if len(ids) == 0 {
			o.res.err = notFound(o.sid)
			return nil
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM sessions WHERE id = ?`, o.sid); err != nil {
			return err
		}
		o.deleted, o.delPKs = ids, pks
	}
	return nil
}

// insertRows writes the buffered event rows in order, with multi-row
// inserts. A row whose session was deleted after the append was accepted
// is dropped (with a warning); any other failure fails the transaction.
func (s *Store) insertRows(ctx context.Context, st *txStatements) error {
	rows := s.rows
	s.rows = s.rows[:0]
	for len(rows) > 0 {
		n := 1
		for _, size := range multiRow {
			if len(rows) >= size {
				n = size
				break
			}
		}
		chunk := rows[:n]
		rows = rows[n:]
		args := s.args[:0]
		for _, r := range chunk {
			args = append(args, r.pk, r.seq, r.at, r.kind, r.data)
		}
		s.args = args
		_, err := st.insEvents[n].ExecContext(ctx, args...)
		if err == nil {
			continue
		}
		if !isForeignKey(err) {
			return err
		}
		// Find the rows of deleted sessions one by one.
		for _, r := range chunk {
			if _, err := st.insEvents[1].ExecContext(ctx, r.pk, r.seq, r.at, r.kind, r.data); err != nil {
				if !isForeignKey(err) {
					return err
				}
				s.log.Warn("session store: event of a deleted session dropped", "session_pk", r.pk, "seq", r.seq)
			}
		}
	}
	clear(s.args) // drop references to the event data
	return nil
}

func runUpdate(fn func(*session.Session), s *session.Session) (r result) {
	defer func() {
		if v := recover(); v != nil {
			r = result{panicked: true, panicV: v}
		}
	}()
	fn(s)
	return result{}
}

// ---- prepared statements ----

// multiRow are the row counts of the prepared multi-row event inserts,
// largest first; 1 is always there.
var multiRow = []int{128, 16, 1}

type statements struct {
	insEvents                   map[int]*sql.Stmt
	maxSeq, insMessage, insPart *sql.Stmt
}

type txStatements struct {
	insEvents                   map[int]*sql.Stmt
	maxSeq, insMessage, insPart *sql.Stmt
}

func prepare(ctx context.Context, db *sql.DB) (*statements, error) {
	st := &statements{insEvents: map[int]*sql.Stmt{}}
	var err error
	prep := func(q string) *sql.Stmt {
		if err != nil {
			return nil
		}
		var p *sql.Stmt
		p, err = db.PrepareContext(ctx, q)
		return p
	}
	for _, n := range multiRow {
		values := strings.TrimSuffix(strings.Repeat("(?, ?, ?, ?, ?), ", n), ", ")
		st.insEvents[n] = prep(`INSERT INTO events (session_pk, seq, time, kind, data) VALUES ` + values)
	}
	st.maxSeq = prep(`SELECT COALESCE(MAX(seq), 0) FROM events WHERE session_pk = ?`)
	st.insMessage = prep(`INSERT INTO messages (id, session_pk, agent_name, role, synthetic, created_at) VALUES (?, ?, ?, ?, ?, ?)`)
	st.insPart = prep(`INSERT INTO parts (message_seq, idx, kind, text, tool_call_id, tool_name, args, is_error) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`)
	if err != nil {
		st.close()
		return nil, err
	}
	return st, nil
}

func (st *statements) in(tx *sql.Tx) *txStatements {
	out := &txStatements{insEvents: make(map[int]*sql.Stmt, len(st.insEvents)),
		maxSeq: tx.Stmt(st.maxSeq), insMessage: tx.Stmt(st.insMessage), insPart: tx.Stmt(st.insPart)}
	for n, p := range st.insEvents {
		out.insEvents[n] = tx.Stmt(p)
	}
	return out
}

func (st *statements) close() {
	all := []*sql.Stmt{st.maxSeq, st.insMessage, st.insPart}
	for _, p := range st.insEvents {
		all = append(all, p)
	}
	for _, p := range all {
		if p != nil {
			p.Close()
		}
	}
}
