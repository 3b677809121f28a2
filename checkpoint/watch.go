package checkpoint

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/agentpool/agentpool/internal/gitignore"
	"github.com/agentpool/agentpool/session"
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

	mu sync.Mutex
	// bg are the background shells started by watched calls, by session
	// and shell id: the workspace as it was when each was last seen.
	bg map[string]*baseline
}

// maxBaselines bounds the background shells a Watcher follows.
const maxBaselines = 256

// baseline is a background shell's workspace as last seen: the files as
// they were then, less those a file tool has changed since (what they
// were is captured by that tool).
type baseline struct {
	session  string               // the shell's
	cs       session.CaptureStore // where its changes are kept: its run's store
	root     string
	files    map[string]fileState
	ign      *gitignore.Matcher // the .gitignore files as they were then
	wasShort string             // why the scan it comes from stopped short
	skip     map[string]bool    // changed by a file tool since
}

func (b *baseline) clone() *baseline {
	c := *b
	c.files, c.skip = maps.Clone(b.files), maps.Clone(b.skip)
	return &c
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
	cs := t.w.capturing(ctx, call)
	if cs == nil {
		return t.Tool.Call(ctx, call)
	}
	ws := workspace.From(ctx, t.def)
	if ws == nil {
		return t.Tool.Call(ctx, call)
	}
	root := ws.Root()
	before := t.w.sc.scan(root)
	var lost []string
	bgKey, base := t.w.background(call)
	if base != nil && base.root == root {
		// What a background shell changed since it was last seen, for
		// this call, which reads or ends it.
		lost = t.w.catchUp(ctx, cs, change(call, root), base, before)
	}
	res, err := t.Tool.Call(ctx, call)
	after := t.w.sc.scan(root)
	paths := sorted(changed(before, after))
	t.w.follow(call, res, cs, bgKey, root, after, paths)
	var notes []string
	for _, short := range []string{before.short, after.short} {
		if short != "" {
			notes = append(notes, "the workspace scan stopped short ("+short+"): changes past it were not captured")
			break
		}
	}
	for _, p := range paths {
		if e := t.w.capture(ctx, cs, change(call, root), p, before); e != "" {
			lost = append(lost, e)
		}
	}
	if note := checkpointNote(notes, lost); note != "" {
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

// checkpointNote is what a call's result says of what was not captured
// ("" when all was).
func checkpointNote(notes, lost []string) string {
	if len(lost) > 0 {
		notes = append(notes, "not captured, so a rewind will not restore them: "+strings.Join(lost, "; "))
	}
	if len(notes) == 0 {
		return ""
	}
	return "[checkpoint: " + strings.Join(notes, ". ") + "]"
}

// change is the capture key of a call's changes in root.
func change(call tool.Call, root string) workspace.Change {
	return workspace.Change{SessionID: call.SessionID, MessageID: call.MessageID, ToolCallID: call.ID, Root: root}
}

// catchUp captures, for c, what changed in base's workspace from base
// (a background shell's baseline) to now, but the files a file tool
// changed meanwhile (theirs), as base had them; it returns what it could
// not capture.
func (w *Watcher) catchUp(ctx context.Context, cs session.CaptureStore, c workspace.Change, base *baseline, now *snapshot) []string {
	bs := &snapshot{files: base.files, ign: base.ign, short: base.wasShort}
	var lost []string
	for _, p := range sorted(changed(bs, now)) {
		if base.skip[p] {
			continue
		}
		if e := w.capture(ctx, cs, c, p, bs); e != "" {
			lost = append(lost, e)
		}
	}
	return lost
}

func sorted(s []string) []string {
	slices.Sort(s)
	return s
}

// background returns the key and baseline of the background shell a
// call reads or ends (its bash_id or shell_id argument), if it is
// followed.
func (w *Watcher) background(call tool.Call) (string, *baseline) {
	var a struct {
		BashID  string `json:"bash_id"`
		ShellID string `json:"shell_id"`
	}
	if json.Unmarshal(call.Args, &a) != nil || a.BashID+a.ShellID == "" {
		return "", nil
	}
	key := call.SessionID + "\x00" + a.BashID + a.ShellID
	w.mu.Lock()
	defer w.mu.Unlock()
	b := w.bg[key]
	if b == nil {
		return key, nil
	}
	return key, b.clone()
}

// follow updates the background shells after a watched call in root:
// the files it changed are its own (the baselines take them as they are
// now); a shell it started is followed from now, one it read is followed
// from now unless it has ended.
func (w *Watcher) follow(call tool.Call, res tool.Result, cs session.CaptureStore, key, root string, after *snapshot, changed []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, b := range w.bg {
		if b.root != root {
			continue
		}
		for _, p := range changed {
			delete(b.skip, p)
			if f, ok := after.files[p]; ok {
				b.files[p] = f
			} else {
				delete(b.files, p)
			}
		}
	}
	started := res.Metadata["background"] == true
	if id, _ := res.Metadata["shell_id"].(string); started && id != "" {
		key = call.SessionID + "\x00" + id
	} else if key == "" || w.bg[key] == nil {
		return
	}
	w.forgetLocked(key)
	if running, ok := res.Metadata["running"].(bool); (ok && !running) || res.IsError {
		return // ended, or gone
	}
	if !started && res.Metadata["status"] == nil {
		return // KillShell: ended
	}
	w.followLocked(key, &baseline{session: call.SessionID, cs: cs, root: root, files: maps.Clone(after.files), ign: after.ign, wasShort: after.short, skip: map[string]bool{}})
}

// touched is told of a file a file tool is about to change: the
// background shells' baselines forget it (the tool captures it).
func (w *Watcher) touched(root, path string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, b := range w.bg {
		if b.root == root {
			b.skip[path] = true
		}
	}
}

// Checkpointer returns the file tools' checkpointer (Capturer) that also
// keeps the background shells' baselines true.
func (w *Watcher) Checkpointer() workspace.Checkpointer { return fileTools{w} }

type fileTools struct{ w *Watcher }

func (f fileTools) Before(ctx context.Context, c workspace.Change, prior func() (workspace.Prior, error)) error {
	f.w.touched(c.Root, c.Path)
	return f.w.cp.Before(ctx, c, prior)
}

// capturing returns the store that keeps a call's changes: its run's,
// when it keeps captures (nil: none).
func (w *Watcher) capturing(ctx context.Context, call tool.Call) session.CaptureStore {
	if call.SessionID == "" {
		return nil
	}
	return runCaptures(ctx)
}

// capture keeps path as before had it for c's message (c.Path is set
// here); it returns why it could not ("" when kept or kept already).
func (w *Watcher) capture(ctx context.Context, cs session.CaptureStore, c workspace.Change, path string, before *snapshot) string {
	b, existed := before.files[path]
	if existed && !b.kept {
		return fmt.Sprintf("%s (%d bytes; over the scan's bound)", path, b.size)
	}
	c.Path = path
	err := put(ctx, cs, c, func() (workspace.Prior, error) {
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
