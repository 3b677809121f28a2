// Session records: create, get, update, list, delete.

package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/session"
)

const sessionColumns = `id, parent_id, depth, agent_name, source_type, title, status, stop_reason,
	created_at, updated_at, usage::text, cost, total_usage::text, total_cost, duration_ms, metadata::text`

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

func scanSession(r pgx.Row) (session.Session, error) {
	var (
		s                   session.Session
		parent, meta        *string
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
	if parent != nil {
		s.ParentID = *parent
	}
	s.AgentName, s.SourceType, s.Status, s.StopReason = agent, event.SourceType(source), session.Status(status), event.StopReason(stop)
	s.CreatedAt, s.UpdatedAt = fromUnixNano(created), fromUnixNano(updated)
	if err := json.Unmarshal([]byte(usage), &s.Usage); err != nil {
		return s, fmt.Errorf("session %s: usage: %w", s.ID, err)
	}
	if err := json.Unmarshal([]byte(totalUsage), &s.TotalUsage); err != nil {
		return s, fmt.Errorf("session %s: total_usage: %w", s.ID, err)
	}
	if meta != nil && *meta != "null" {
		if err := json.Unmarshal([]byte(*meta), &s.Metadata); err != nil {
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
	var meta *string
	if s.Metadata != nil {
		b, err := json.Marshal(s.Metadata)
		if err != nil {
			return nil, fmt.Errorf("metadata: %w", err)
		}
		m := string(b)
		meta = &m
	}
	return []any{s.Depth, s.AgentName, string(s.SourceType), s.Title, string(s.Status), string(s.StopReason),
		unixNano(s.CreatedAt), unixNano(s.UpdatedAt), string(usage), s.Cost, string(total), s.TotalCost, s.DurationMS, meta}, nil
}

// CreateSession implements session.Store.
func (s *Store) CreateSession(ctx context.Context, sess session.Session) (err error) {
	defer s.account(ctx, 1, &err)
	if err := session.CheckWrite(ctx, 1); err != nil {
		return err
	}
	if s.isClosed() {
		return session.ErrClosed
	}
	if sess.ID == "" {
		return errors.New("postgres: session id is empty")
	}
	if sess.ParentID == sess.ID {
		// The foreign key would find the row itself: a session that is its
		// own parent is a cycle every walk up or down the tree runs into.
		return notFound(sess.ParentID)
	}
	if sess.CreatedAt.IsZero() {
		sess.CreatedAt = time.Now()
	}
	if sess.UpdatedAt.IsZero() {
		sess.UpdatedAt = sess.CreatedAt
	}
	args, aerr := sessionArgs(sess)
	if aerr != nil {
		return fmt.Errorf("postgres: session %s: %w", sess.ID, aerr)
	}
	var parent *string
	if sess.ParentID != "" {
		parent = &sess.ParentID
	}
	args = append([]any{sess.ID, parent}, args...)
	args = append(args, s.instance)
	_, err = s.pool.Exec(ctx, `INSERT INTO sessions (id, parent_id, depth, agent_name, source_type, title, status, stop_reason,
		created_at, updated_at, usage, cost, total_usage, total_cost, duration_ms, metadata, owner)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11::json, $12, $13::json, $14, $15, $16::json, $17)`, args...)
	switch pgCode(err) {
	case "":
		return s.wrap(err)
	case codeUniqueViolation:
		return fmt.Errorf("%w: %s", session.ErrExists, sess.ID)
	case codeForeignKeyViolation:
		return notFound(sess.ParentID)
	}
	return s.wrap(err)
}

// GetSession implements session.Store.
func (s *Store) GetSession(ctx context.Context, id string) (session.Session, error) {
	if s.isClosed() {
		return session.Session{}, session.ErrClosed
	}
	sess, err := scanSession(s.pool.QueryRow(ctx, `SELECT `+sessionColumns+` FROM sessions WHERE id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return session.Session{}, notFound(id)
	}
	return sess, s.wrap(err)
}

// UpdateSession implements session.Store: the row is locked (FOR NO KEY
// UPDATE, which appends to the session do not wait for) while fn runs, so concurrent updates from any process apply
// one after the other. A panic in fn rolls back and is raised again.
func (s *Store) UpdateSession(ctx context.Context, id string, fn func(*session.Session)) (err error) {
	defer s.account(ctx, 1, &err)
	if err := session.CheckWrite(ctx, 1); err != nil {
		return err
	}
	if s.isClosed() {
		return session.ErrClosed
	}
	// Two round trips: BEGIN with the locking read, then the write with
	// COMMIT (pgx sends a batch at once). Until COMMIT succeeded the
	// transaction is rolled back on the way out, a panic in fn included.
	c, err := s.pool.Acquire(ctx)
	if err != nil {
		return s.wrap(err)
	}
	defer c.Release()
	open := false
	defer func() {
		if open {
			c.Exec(context.WithoutCancel(ctx), `ROLLBACK`)
		}
	}()
	b := &pgx.Batch{}
	b.Queue(`BEGIN`)
	b.Queue(`SELECT `+sessionColumns+` FROM sessions WHERE id = $1 FOR NO KEY UPDATE`, id)
	br := c.SendBatch(ctx, b)
	_, err = br.Exec()
	open = err == nil
	var cur session.Session
	if err == nil {
		cur, err = scanSession(br.QueryRow())
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return notFound(id)
	}
	if err != nil {
		return s.wrap(err)
	}
	next := cur
	next.Metadata = session.CloneMetadata(cur.Metadata)
	fn(&next)
	next.ID, next.ParentID, next.Depth, next.CreatedAt = cur.ID, cur.ParentID, cur.Depth, cur.CreatedAt
	next.UpdatedAt = time.Now()
	if !next.UpdatedAt.After(cur.UpdatedAt) {
		next.UpdatedAt = cur.UpdatedAt.Add(time.Nanosecond)
	}
	args, err := sessionArgs(next)
	if err != nil {
		return fmt.Errorf("postgres: session %s: %w", id, err)
	}
	args = append(args, s.instance, id)
	b = &pgx.Batch{}
	b.Queue(`UPDATE sessions SET depth = $1, agent_name = $2, source_type = $3, title = $4, status = $5, stop_reason = $6,
		created_at = $7, updated_at = $8, usage = $9::json, cost = $10, total_usage = $11::json, total_cost = $12, duration_ms = $13,
		metadata = $14::json, owner = $15 WHERE id = $16`, args...)
	b.Queue(`COMMIT`)
	if err := c.SendBatch(ctx, b).Close(); err != nil {
		return s.wrap(err)
	}
	open = false
	return nil
}

// threadExpr is a session's AG-UI thread (session.MetaThread), as the
// index sessions_thread (migration 0002) holds it.
const threadExpr = `(metadata ->> '` + session.MetaThread + `')`

// ListSessions implements session.Store.
func (s *Store) ListSessions(ctx context.Context, opts session.ListOptions) ([]session.Session, error) {
	if s.isClosed() {
		return nil, session.ErrClosed
	}
	q, args := listQuery(opts)
	rows, err := s.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, s.wrap(err)
	}
	defer rows.Close()
	var out []session.Session
	for rows.Next() {
		sess, err := scanSession(rows)
		if err != nil {
			return nil, s.wrap(err)
		}
		out = append(out, sess)
	}
	return out, s.wrap(rows.Err())
}

// listQuery is the query of ListSessions and its arguments.
func listQuery(opts session.ListOptions) (string, []any) {
	var (
		where []string
		args  []any
	)
	switch {
	case opts.ParentID != "":
		args = append(args, opts.ParentID)
		where = append(where, fmt.Sprintf(`parent_id = $%d`, len(args)))
	case opts.RootsOnly:
		where = append(where, `parent_id IS NULL`)
	}
	if opts.Thread != "" {
		// The expression of the index sessions_thread, word for word (an
		// expression index serves that expression only); ->> turns any
		// JSON value into text, so the type is checked too.
		args = append(args, opts.Thread)
		where = append(where, fmt.Sprintf(`%s = $%d AND json_typeof(metadata -> '%s') = 'string'`, threadExpr, len(args), session.MetaThread))
	}
	q := `SELECT ` + sessionColumns + ` FROM sessions`
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, ` AND `)
	}
	q += ` ORDER BY created_at DESC, id ASC`
	if opts.Limit > 0 {
		args = append(args, opts.Limit)
		q += fmt.Sprintf(` LIMIT $%d`, len(args))
	}
	return q, args
}

// DeleteSession implements session.Store: the foreign keys cascade to the
// subtree, its messages and its events.
func (s *Store) DeleteSession(ctx context.Context, id string) (err error) {
	defer s.account(ctx, 1, &err)
	if err := session.CheckWrite(ctx, 1); err != nil {
		return err
	}
	if s.isClosed() {
		return session.ErrClosed
	}
	// Under the appends' lock (see commit): an append never numbers
	// events for a session that is being deleted.
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return s.wrap(err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	if _, err := tx.Exec(ctx, `SELECT last FROM event_counter FOR UPDATE`); err != nil {
		return s.wrap(err)
	}
	tag, err := tx.Exec(ctx, `DELETE FROM sessions WHERE id = $1`, id)
	if err != nil {
		return s.wrap(err)
	}
	if tag.RowsAffected() == 0 {
		return notFound(id)
	}
	return s.wrap(tx.Commit(ctx))
}

// exists reports whether a session exists.
func (s *Store) exists(ctx context.Context, id string) (bool, error) {
	var one int
	err := s.pool.QueryRow(ctx, `SELECT 1 FROM sessions WHERE id = $1`, id).Scan(&one)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	return err == nil, s.wrap(err)
}
