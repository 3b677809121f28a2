// Checkpoints: the content of a file before a tool changed it
// (docs/checkpoints.md).

package session

import (
	"context"
	"errors"
	"time"
)

// MaxCaptureBytes bounds the content of one capture: a file larger than
// this is not captured, and a tool that would change it while captures
// are taken refuses to (it could not be restored).
const MaxCaptureBytes = 64 << 20

// ErrCaptureTooLarge is returned for a capture over MaxCaptureBytes.
var ErrCaptureTooLarge = errors.New("file too large to checkpoint")

// Capture is a file as it was before a change made at a checkpoint of a
// session: a message of its conversation (the assistant message whose
// tool call made the change). The first capture of a file at each
// checkpoint is kept; later ones at the same checkpoint are not stored,
// so a session holds, for each checkpoint, the files it changed as they
// were before it.
type Capture struct {
	SessionID string `json:"session_id"`
	// MessageID is the message of the checkpoint, "" when the tool did
	// not know it (a call made outside the agent loop); ToolCallID, the
	// call that made the change, then stands for it.
	MessageID  string `json:"message_id,omitempty"`
	ToolCallID string `json:"tool_call_id,omitempty"`
	// Root is the workspace directory (absolute) and Path the file in it
	// (slash-separated, relative to Root).
	Root string `json:"root"`
	Path string `json:"path"`
	// Exists is false when the file did not exist: restoring it removes it.
	Exists bool `json:"exists"`
	// Mode is the file's permission bits, when it existed.
	Mode uint32 `json:"mode,omitempty"`
	// Content is the file's bytes, when it existed.
	Content []byte `json:"-"`
	// Seq orders the captures of a store (set by the store: later
	// captures have larger ones, across sessions).
	Seq       int64     `json:"seq"`
	CreatedAt time.Time `json:"created_at"`
}

// Checkpoint is the key of c's checkpoint: its message, else its tool
// call.
func (c Capture) Checkpoint() string {
	if c.MessageID != "" {
		return c.MessageID
	}
	return "call:" + c.ToolCallID
}

// CaptureStore is implemented by a store that keeps file captures and
// whose conversations can be cut back (the checkpoint package's Rewind
// and Fork). Captures are kept with their session: DeleteSession (and a
// store's retention) removes them. Content is stored once per store
// however many captures hold the same bytes (the SQL stores address it by
// its SHA-256), and dropped with the last capture that holds it.
type CaptureStore interface {
	// PutCapture stores c unless the session already has a capture of the
	// same file (Root, Path) at the same checkpoint (Capture.Checkpoint),
	// and reports whether it stored it. ErrNotFound when the session does
	// not exist; ErrCaptureTooLarge when Content is over MaxCaptureBytes.
	PutCapture(ctx context.Context, c Capture) (bool, error)
	// HasCapture reports whether the session has a capture of the file at
	// the checkpoint (a Capture.Checkpoint value), without reading it.
	HasCapture(ctx context.Context, sessionID, checkpoint, root, path string) (bool, error)
	// Captures returns the captures of a session, content included, in
	// the order they were stored (Seq). ErrNotFound when the session does
	// not exist.
	Captures(ctx context.Context, sessionID string) ([]Capture, error)
	// TruncateMessages removes message fromID and every later message of
	// the session's conversation (and the captures taken at their
	// checkpoints stay: they are the session's history of files). It
	// returns how many messages were removed. ErrNotFound when the session
	// does not exist or fromID is not one of its messages.
	TruncateMessages(ctx context.Context, sessionID, fromID string) (int, error)
}

// CheckCapture validates c before a store takes it.
func CheckCapture(c Capture) error {
	switch {
	case c.SessionID == "":
		return errors.New("capture: no session id")
	case c.MessageID == "" && c.ToolCallID == "":
		return errors.New("capture: neither a message id nor a tool call id")
	case c.Root == "" || c.Path == "":
		return errors.New("capture: no root or path")
	case len(c.Content) > MaxCaptureBytes:
		return ErrCaptureTooLarge
	case !c.Exists && len(c.Content) > 0:
		return errors.New("capture: content for a file that did not exist")
	}
	return nil
}

// CaptureStoreOf returns st as a CaptureStore: st itself, or the store it
// wraps (a wrapper's Unwrap() Store method, followed down), so that a
// wrapper that adds behaviour to some writes does not hide the
// capability.
func CaptureStoreOf(st Store) (CaptureStore, bool) {
	for st != nil {
		if cs, ok := st.(CaptureStore); ok {
			return cs, true
		}
		u, ok := st.(interface{ Unwrap() Store })
		if !ok {
			return nil, false
		}
		st = u.Unwrap()
	}
	return nil, false
}
