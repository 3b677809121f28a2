package workspace

import (
	"context"
	"io/fs"
)

// Change names a file a tool call is about to change (docs/checkpoints.md).
type Change struct {
	SessionID  string // the session whose agent made the call
	MessageID  string // the message that holds the call, "" when unknown
	ToolCallID string
	Root       string // the workspace directory (absolute)
	Path       string // the file, slash-separated, relative to Root
}

// Prior is a file as it was before a change: absent, or its bytes and
// permission bits.
type Prior struct {
	Exists  bool
	Mode    fs.FileMode
	Content []byte
}

// Checkpointer is told of every change a file tool is about to make, so
// that it can keep the file as it was (the checkpoints of a session). The
// tool calls Before while it holds its lock of the path, before the
// change; prior reads the file's state and is called only when the
// checkpointer wants it (not for a file it has already kept at this
// checkpoint). An error from Before stops the change: a change that could
// not be undone is not made.
type Checkpointer interface {
	Before(ctx context.Context, c Change, prior func() (Prior, error)) error
}
