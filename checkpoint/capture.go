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
	cs := runCaptures(ctx)
	if cs == nil {
		return nil
	}
	return put(ctx, cs, c, prior)
}

// runCaptures is the store of the run in ctx when it keeps captures (nil:
// no run, or a store that keeps none).
func runCaptures(ctx context.Context) session.CaptureStore {
	inv := spawn.InvocationFrom(ctx)
	if inv == nil || inv.Runtime == nil {
		return nil
	}
	cs, _ := session.CaptureStoreOf(inv.Runtime.Store())
	return cs
}

// put keeps c's file as prior says it was, unless c's checkpoint has it
// already (the first change at a checkpoint wins).
func put(ctx context.Context, cs session.CaptureStore, c workspace.Change, prior func() (workspace.Prior, error)) error {
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
