// File captures (session.CaptureStore): migration 0006.

package sqlite

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/agentpool/agentpool/session"
)

var _ session.CaptureStore = (*Store)(nil)

// Captures are rare (a file's first change at a checkpoint), so they do
// not go through the writer's queue: each is a transaction of its own on
// a connection of the pool, after settle has committed what the writer
// holds (the session may have been created in its open transaction). The
// writer's transactions and these wait for each other through the
// database's write lock (busy timeout), as another process's would.

// PutCapture implements session.CaptureStore.
func (s *Store) PutCapture(ctx context.Context, c session.Capture) (bool, error) {
	if err := session.CheckCapture(c); err != nil {
		return false, err
	}
	if err := session.CheckWrite(ctx, 1); err != nil {
		return false, err
	}
	stored, err := s.putCapture(ctx, c)
	return stored, session.ReportWrite(ctx, 1, err)
}

func (s *Store) putCapture(ctx context.Context, c session.Capture) (bool, error) {
	if err := s.settle(ctx); err != nil {
		return false, err
	}
	var hash any
	if c.Exists {
		sum := sha256.Sum256(c.Content)
		hash = hex.EncodeToString(sum[:])
	}
	if c.CreatedAt.IsZero() {
		c.CreatedAt = time.Now()
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return false, err
	}
	defer tx.Rollback()
	res, err := tx.ExecContext(ctx, `INSERT INTO captures (session_pk, checkpoint, message_id, tool_call_id, root, path, hash, mode, created_at)
		SELECT pk, ?, ?, ?, ?, ?, ?, ?, ? FROM sessions WHERE id = ? ON CONFLICT DO NOTHING`,
		c.Checkpoint(), c.MessageID, c.ToolCallID, c.Root, c.Path, hash, c.Mode, unixNano(c.CreatedAt), c.SessionID)
	if err != nil {
		return false, err
	}
	if n, err := res.RowsAffected(); err != nil {
		return false, err
	} else if n == 0 {
		var pk int64
		err := tx.QueryRowContext(ctx, `SELECT pk FROM sessions WHERE id = ?`, c.SessionID).Scan(&pk)
		if errors.Is(err, sql.ErrNoRows) {
			return false, notFound(c.SessionID)
		}
		return false, err // nil: a capture of the checkpoint was there
	}
	if hash != nil {
		content := c.Content
		if content == nil {
			content = []byte{}
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO blobs (hash, content) VALUES (?, ?) ON CONFLICT DO NOTHING`, hash, content); err != nil {
			return false, err
		}
	}
	if err := tx.Commit(); err != nil {
		return false, err
	}
	return true, nil
}

// HasCapture implements session.CaptureStore.
func (s *Store) HasCapture(ctx context.Context, sessionID, checkpoint, root, path string) (bool, error) {
	if err := s.settle(ctx); err != nil {
		return false, err
	}
	var one int
	err := s.db.QueryRowContext(ctx, `SELECT 1 FROM sessions s JOIN captures c ON c.session_pk = s.pk
		WHERE s.id = ? AND c.checkpoint = ? AND c.root = ? AND c.path = ?`, sessionID, checkpoint, root, path).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	return err == nil, err
}

// Captures implements session.CaptureStore.
func (s *Store) Captures(ctx context.Context, sessionID string) ([]session.Capture, error) {
	if err := s.settle(ctx); err != nil {
		return nil, err
	}
	rows, err := s.db.QueryContext(ctx, `SELECT c.seq, c.message_id, c.tool_call_id, c.root, c.path, c.hash, c.mode, c.created_at, b.hash IS NOT NULL, b.content
		FROM sessions s JOIN captures c ON c.session_pk = s.pk LEFT JOIN blobs b ON b.hash = c.hash
		WHERE s.id = ? ORDER BY c.seq`, sessionID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []session.Capture
	for rows.Next() {
		var (
			c       = session.Capture{SessionID: sessionID}
			hash    sql.NullString
			created int64
			found   bool
			content []byte
		)
		if err := rows.Scan(&c.Seq, &c.MessageID, &c.ToolCallID, &c.Root, &c.Path, &hash, &c.Mode, &created, &found, &content); err != nil {
			return nil, err
		}
		c.CreatedAt = fromUnixNano(created)
		if hash.Valid {
			if !found {
				return nil, fmt.Errorf("session %s: capture %d of %s: content %s missing", sessionID, c.Seq, c.Path, hash.String)
			}
			if content == nil {
				content = []byte{}
			}
			c.Exists, c.Content = true, content
		}
		out = append(out, c)
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

// TruncateMessages implements session.CaptureStore.
func (s *Store) TruncateMessages(ctx context.Context, sessionID, fromID string) (int, error) {
	if err := session.CheckWrite(ctx, 1); err != nil {
		return 0, err
	}
	n, err := s.truncate(ctx, sessionID, fromID)
	return n, session.ReportWrite(ctx, 1, err)
}

func (s *Store) truncate(ctx context.Context, sessionID, fromID string) (int, error) {
	if err := s.settle(ctx); err != nil {
		return 0, err
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback()
	var pk, seq int64
	err = tx.QueryRowContext(ctx, `SELECT s.pk, m.seq FROM sessions s JOIN messages m ON m.session_pk = s.pk
		WHERE s.id = ? AND m.id = ? ORDER BY m.seq LIMIT 1`, sessionID, fromID).Scan(&pk, &seq)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, fmt.Errorf("%w: message %s of session %s", session.ErrNotFound, fromID, sessionID)
	}
	if err != nil {
		return 0, err
	}
	res, err := tx.ExecContext(ctx, `DELETE FROM messages WHERE session_pk = ? AND seq >= ?`, pk, seq)
	if err != nil {
		return 0, err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, err
	}
	return int(n), tx.Commit()
}
