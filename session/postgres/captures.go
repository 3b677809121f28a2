// File captures (session.CaptureStore): migration 0003.

package postgres

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentpool/agentpool/session"
)

var _ session.CaptureStore = (*Store)(nil)

// PutCapture implements session.CaptureStore: one transaction, committed
// before it returns.
func (s *Store) PutCapture(ctx context.Context, c session.Capture) (stored bool, err error) {
	if err := session.CheckCapture(c); err != nil {
		return false, err
	}
	defer s.account(ctx, 1, &err)
	if err := session.CheckWrite(ctx, 1); err != nil {
		return false, err
	}
	if s.isClosed() {
		return false, session.ErrClosed
	}
	var hash *string
	if c.Exists {
		sum := sha256.Sum256(c.Content)
		h := hex.EncodeToString(sum[:])
		hash = &h
	}
	if c.CreatedAt.IsZero() {
		c.CreatedAt = time.Now()
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return false, s.wrap(err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	if hash != nil {
		// The content first, its row locked (DO UPDATE) until the commit:
		// a delete of its last capture committed meanwhile is waited for
		// and the row written again. (A delete that started before this
		// transaction and commits after it may still collect the content:
		// docs/checkpoints.md, Limits.)
		content := c.Content
		if content == nil {
			content = []byte{}
		}
		if _, err := tx.Exec(ctx, `INSERT INTO blobs (hash, content) VALUES ($1, $2)
			ON CONFLICT (hash) DO UPDATE SET hash = EXCLUDED.hash`, *hash, content); err != nil {
			return false, s.wrap(err)
		}
	}
	tag, err := tx.Exec(ctx, `INSERT INTO captures (session_pk, checkpoint, message_id, tool_call_id, root, path, hash, mode, created_at)
		SELECT pk, $2, $3, $4, $5, $6, $7, $8, $9 FROM sessions WHERE id = $1 ON CONFLICT DO NOTHING`,
		c.SessionID, c.Checkpoint(), c.MessageID, c.ToolCallID, c.Root, c.Path, hash, int64(c.Mode), unixNano(c.CreatedAt))
	if pgCode(err) == codeForeignKeyViolation {
		return false, notFound(c.SessionID) // deleted meanwhile
	}
	if err != nil {
		return false, s.wrap(err)
	}
	if tag.RowsAffected() == 0 {
		// A capture of the checkpoint was there, or no session: the
		// content written above goes with the rollback.
		if ok, err := s.exists(ctx, c.SessionID); err != nil {
			return false, err
		} else if !ok {
			return false, notFound(c.SessionID)
		}
		return false, nil
	}
	return true, s.wrap(tx.Commit(ctx))
}

// HasCapture implements session.CaptureStore.
func (s *Store) HasCapture(ctx context.Context, sessionID, checkpoint, root, path string) (bool, error) {
	if s.isClosed() {
		return false, session.ErrClosed
	}
	var one int
	err := s.pool.QueryRow(ctx, `SELECT 1 FROM sessions s JOIN captures c ON c.session_pk = s.pk
		WHERE s.id = $1 AND c.checkpoint = $2 AND c.root = $3 AND c.path = $4`, sessionID, checkpoint, root, path).Scan(&one)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	return err == nil, s.wrap(err)
}

// Captures implements session.CaptureStore.
func (s *Store) Captures(ctx context.Context, sessionID string) ([]session.Capture, error) {
	if s.isClosed() {
		return nil, session.ErrClosed
	}
	rows, err := s.pool.Query(ctx, `SELECT c.seq, c.message_id, c.tool_call_id, c.root, c.path, c.hash, c.mode, c.created_at,
			b.hash IS NOT NULL, b.content
		FROM sessions s JOIN captures c ON c.session_pk = s.pk LEFT JOIN blobs b ON b.hash = c.hash
		WHERE s.id = $1 ORDER BY c.seq`, sessionID)
	if err != nil {
		return nil, s.wrap(err)
	}
	defer rows.Close()
	var out []session.Capture
	for rows.Next() {
		var (
			c             = session.Capture{SessionID: sessionID}
			hash          *string
			mode, created int64
			found         bool
			content       []byte
		)
		if err := rows.Scan(&c.Seq, &c.MessageID, &c.ToolCallID, &c.Root, &c.Path, &hash, &mode, &created, &found, &content); err != nil {
			return nil, s.wrap(err)
		}
		c.Mode, c.CreatedAt = uint32(mode), fromUnixNano(created)
		if hash != nil {
			if !found {
				return nil, fmt.Errorf("session %s: capture %d of %s: content %s missing", sessionID, c.Seq, c.Path, *hash)
			}
			if content == nil {
				content = []byte{}
			}
			c.Exists, c.Content = true, content
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, s.wrap(err)
	}
	return out, missingIfEmpty(ctx, s, sessionID, len(out))
}

// TruncateMessages implements session.CaptureStore.
func (s *Store) TruncateMessages(ctx context.Context, sessionID, fromID string) (n int, err error) {
	defer s.account(ctx, 1, &err)
	if err := session.CheckWrite(ctx, 1); err != nil {
		return 0, err
	}
	if s.isClosed() {
		return 0, session.ErrClosed
	}
	tag, err := s.pool.Exec(ctx, `WITH m AS (
			SELECT m.session_pk, m.pk FROM sessions s JOIN messages m ON m.session_pk = s.pk
			WHERE s.id = $1 AND m.id = $2 ORDER BY m.pk LIMIT 1)
		DELETE FROM messages d USING m WHERE d.session_pk = m.session_pk AND d.pk >= m.pk`, sessionID, fromID)
	if err != nil {
		return 0, s.wrap(err)
	}
	if tag.RowsAffected() == 0 {
		return 0, fmt.Errorf("%w: message %s of session %s", session.ErrNotFound, fromID, sessionID)
	}
	return int(tag.RowsAffected()), nil
}
