package memory

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/agentpool/agentpool/session"
)

// Captures (session.CaptureStore): each session's entry holds its
// captures; their contents are shared store-wide, one copy per distinct
// content (keyed by the content itself: no hash is needed in memory), and
// dropped with the last capture that holds it.

// blob is one distinct content and the number of captures that hold it.
type blob struct {
	data []byte
	refs int
}

// capKey is what makes a capture the first of its file at its checkpoint.
type capKey struct{ checkpoint, root, path string }

// storedCapture is a capture without its content, and the content's blob.
type storedCapture struct {
	c session.Capture
	b *blob // nil for a file that did not exist
}

var _ session.CaptureStore = (*Store)(nil)

// PutCapture implements session.CaptureStore.
func (st *Store) PutCapture(ctx context.Context, c session.Capture) (bool, error) {
	if err := session.CheckCapture(c); err != nil {
		return false, err
	}
	if err := session.CheckWrite(ctx, 1); err != nil {
		return false, err
	}
	e, err := st.entryOf(c.SessionID)
	if err != nil {
		return false, err
	}
	defer e.mu.Unlock()
	k := capKey{c.Checkpoint(), c.Root, c.Path}
	if _, ok := e.capKeys[k]; ok {
		return false, nil
	}
	if e.capKeys == nil {
		e.capKeys = map[capKey]struct{}{}
	}
	e.capKeys[k] = struct{}{}
	var b *blob
	if c.Exists {
		st.capMu.Lock()
		if st.blobs == nil {
			st.blobs = map[string]*blob{}
		}
		b = st.blobs[string(c.Content)]
		if b == nil {
			b = &blob{data: slices.Clone(c.Content)}
			if b.data == nil {
				b.data = []byte{}
			}
			st.blobs[string(b.data)] = b
		}
		b.refs++
		st.capMu.Unlock()
	}
	c.Content = nil
	c.Seq = st.capSeq.Add(1)
	if c.CreatedAt.IsZero() {
		c.CreatedAt = time.Now()
	}
	e.caps = append(e.caps, storedCapture{c: c, b: b})
	return true, nil
}

// HasCapture implements session.CaptureStore.
func (st *Store) HasCapture(_ context.Context, sessionID, checkpoint, root, path string) (bool, error) {
	e, err := st.entryOf(sessionID)
	if err != nil {
		return false, err
	}
	defer e.mu.Unlock()
	_, ok := e.capKeys[capKey{checkpoint, root, path}]
	return ok, nil
}

// Captures implements session.CaptureStore.
func (st *Store) Captures(_ context.Context, sessionID string) ([]session.Capture, error) {
	e, err := st.entryOf(sessionID)
	if err != nil {
		return nil, err
	}
	defer e.mu.Unlock()
	out := make([]session.Capture, len(e.caps))
	for i, sc := range e.caps {
		out[i] = sc.c
		if sc.b != nil {
			out[i].Content = slices.Clone(sc.b.data)
		}
	}
	return out, nil
}

// TruncateMessages implements session.CaptureStore.
func (st *Store) TruncateMessages(ctx context.Context, sessionID, fromID string) (int, error) {
	if err := session.CheckWrite(ctx, 1); err != nil {
		return 0, err
	}
	e, err := st.entryOf(sessionID)
	if err != nil {
		return 0, err
	}
	defer e.mu.Unlock()
	i := slices.IndexFunc(e.msgs, func(m session.Message) bool { return m.ID == fromID })
	if i < 0 {
		return 0, fmt.Errorf("%w: message %s of session %s", session.ErrNotFound, fromID, sessionID)
	}
	n := len(e.msgs) - i
	clear(e.msgs[i:])
	e.msgs = e.msgs[:i]
	return n, nil
}

// dropCaptures lets go of the contents of the captures of e, which has
// left the store (markGone was called).
func (st *Store) dropCaptures(e *entry) {
	e.mu.Lock()
	caps := e.caps
	e.caps, e.capKeys = nil, nil
	e.mu.Unlock()
	if len(caps) == 0 {
		return
	}
	st.capMu.Lock()
	defer st.capMu.Unlock()
	for _, sc := range caps {
		if b := sc.b; b != nil {
			if b.refs--; b.refs == 0 {
				delete(st.blobs, string(b.data))
			}
		}
	}
}

// blobCount is the number of distinct contents held (for tests).
func (st *Store) blobCount() int {
	st.capMu.Lock()
	defer st.capMu.Unlock()
	return len(st.blobs)
}
