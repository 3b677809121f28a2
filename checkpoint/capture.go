package checkpoint

import (
	"context"

	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/spawn"
	"github.com/agentpool/agentpool/tool/workspace"
)

// Capturer keeps, in the store of the run that makes a change, the file
// as it was before the first change at each checkpoint of the session
// (docs/checkpoints.md): the file tools' workspace.Checkpointer, which
// the pool gives its file tools and an external agent's node the tools
// that serve its fs/write_text_file. A store that is not a
// session.CaptureStore keeps none, and a call outside a run (no
// invocation) is not checkpointed.
type Capturer struct{}

var _ workspace.Checkpointer = Capturer{}

// Before implements workspace.Checkpointer.
func (Capturer) Before(ctx context.Context, c workspace.Change, prior func() (workspace.Prior, error)) error {
	inv := spawn.InvocationFrom(ctx)
	if inv == nil || inv.Runtime == nil {
		return nil
	}
	cs, ok := session.CaptureStoreOf(inv.Runtime.Store())
	if !ok {
		return nil
	}
	capture := session.Capture{SessionID: c.SessionID, MessageID: c.MessageID, ToolCallID: c.ToolCallID, Root: c.Root, Path: c.Path}
	if has, err := cs.HasCapture(ctx, c.SessionID, capture.Checkpoint(), c.Root, c.Path); err != nil || has {
		return err
	}
	p, err := prior()
	if err != nil {
		return err
	}
	capture.Exists, capture.Mode, capture.Content = p.Exists, uint32(p.Mode.Perm()), p.Content
	_, err = cs.PutCapture(ctx, capture)
	return err
}
