package checkpoint

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/spawn"
	"github.com/agentpool/agentpool/tool"
	"github.com/agentpool/agentpool/tool/workspace"
)

// Watcher captures the changes of tools that change files by means the
// pool cannot see (Bash, MCP tools, any tool not known to be read-only):
// it scans the workspace before and after each call and captures, for
// the message that holds the call, every file the call created, changed
// or removed, as it was before (docs/checkpoints.md). One Watcher serves
// a pool; it is safe for concurrent use.
type Watcher struct {
	sc scanner
	cp Capturer
}

// Wrap returns t watched in the workspace of each call (the context's,
// or def), or t itself when it is known to be read-only (its kind is
// read, search, think or fetch).
func (w *Watcher) Wrap(t tool.Tool, def *workspace.Workspace) tool.Tool {
	switch t.Info().Kind {
	case tool.KindRead, tool.KindSearch, tool.KindThink, tool.KindFetch:
		return t
	}
	return &watched{Tool: t, w: w, def: def}
}

// WrapAll is Wrap of each tool.
func (w *Watcher) WrapAll(ts []tool.Tool, def *workspace.Workspace) []tool.Tool {
	out := make([]tool.Tool, len(ts))
	for i, t := range ts {
		out[i] = w.Wrap(t, def)
	}
	return out
}

type watched struct {
	tool.Tool
	w   *Watcher
	def *workspace.Workspace
}

func (t *watched) Locations(c tool.Call) []tool.Location { return tool.Locations(t.Tool, c) }
func (t *watched) Title(c tool.Call) string              { return tool.Title(t.Tool, c) }

// Call implements tool.Tool.
func (t *watched) Call(ctx context.Context, call tool.Call) (tool.Result, error) {
	if !t.w.capturing(ctx, call) {
		return t.Tool.Call(ctx, call)
	}
	ws := workspace.From(ctx, t.def)
	if ws == nil {
		return t.Tool.Call(ctx, call)
	}
	root := ws.Root()
	before := t.w.sc.scan(root)
	res, err := t.Tool.Call(ctx, call)
	after := t.w.sc.scan(root)
	var notes []string
	for _, short := range []string{before.short, after.short} {
		if short != "" {
			notes = append(notes, "the workspace scan stopped short ("+short+"): changes past it were not captured")
			break
		}
	}
	paths := changed(before, after)
	slices.Sort(paths)
	var lost []string
	for _, p := range paths {
		if e := t.w.capture(ctx, call, root, p, before); e != "" {
			lost = append(lost, e)
		}
	}
	if len(lost) > 0 {
		notes = append(notes, "not captured, so a rewind will not restore them: "+strings.Join(lost, "; "))
	}
	if len(notes) > 0 {
		note := "[checkpoint: " + strings.Join(notes, ". ") + "]"
		if err != nil {
			return res, fmt.Errorf("%w %s", err, note)
		}
		res.Content = strings.TrimRight(res.Content, "\n") + "\n\n" + note
		if res.Metadata == nil {
			res.Metadata = map[string]any{}
		}
		res.Metadata["checkpoint_warning"] = note
	}
	return res, err
}

// capturing reports whether a call's changes are kept: in a run whose
// store keeps captures.
func (w *Watcher) capturing(ctx context.Context, call tool.Call) bool {
	if call.SessionID == "" {
		return false
	}
	inv := spawn.InvocationFrom(ctx)
	if inv == nil || inv.Runtime == nil {
		return false
	}
	_, ok := session.CaptureStoreOf(inv.Runtime.Store())
	return ok
}

// capture keeps path as before had it for the call's message; it returns
// why it could not ("" when kept or kept already).
func (w *Watcher) capture(ctx context.Context, call tool.Call, root, path string, before *snapshot) string {
	b, existed := before.files[path]
	if existed && !b.kept {
		return fmt.Sprintf("%s (%d bytes; over the scan's bound)", path, b.size)
	}
	c := workspace.Change{SessionID: call.SessionID, MessageID: call.MessageID, ToolCallID: call.ID, Root: root, Path: path}
	err := w.cp.Before(ctx, c, func() (workspace.Prior, error) {
		if !existed {
			return workspace.Prior{}, nil
		}
		return workspace.Prior{Exists: true, Mode: b.mode, Content: b.content}, nil
	})
	if err != nil {
		return fmt.Sprintf("%s (%v)", path, err)
	}
	return ""
}
