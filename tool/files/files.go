package files

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"path/filepath"
	"strings"
	"sync"

	"github.com/agentpool/agentpool/tool"
	"github.com/agentpool/agentpool/tool/workspace"
)

// ToolsetName is the name of the toolset in agent configurations.
const ToolsetName = "file_access"

// The tool names (Claude Code's).
const (
	Read  = "Read"
	Write = "Write"
	Edit  = "Edit"
	Glob  = "Glob"
	Grep  = "Grep"
	LS    = "LS"
)

// Limits.
const (
	defaultReadLines = 2000    // lines Read shows when no limit is given
	maxLineChars     = 2000    // characters of a line Read shows
	maxReadOutput    = 200_000 // bytes of Read output
	maxDiffBytes     = 1 << 20 // files larger than this get no diff
	maxGlobResults   = 100
	maxLSEntries     = 1000
	maxGrepOutput    = 30_000 // characters of Grep output
	maxGrepLineChars = 500    // characters of a line Grep shows
	sniffBytes       = 8192   // bytes inspected to tell binary from text
)

// Toolset is the file_access toolset. One Toolset is shared by all agents
// and sessions of a pool; it is safe for concurrent use.
type Toolset struct {
	ws      *workspace.Workspace
	tracker *tracker
	locks   [64]sync.Mutex // serialise Write/Edit of one path (striped)
	seed    maphash.Seed
	tools   []tool.Tool
	cp      workspace.Checkpointer // nil: no checkpoints
}

// SetCheckpointer makes Write and Edit tell cp of every file they are
// about to change (workspace.Checkpointer). Call it before the tools are
// used.
func (t *Toolset) SetCheckpointer(cp workspace.Checkpointer) { t.cp = cp }

// New returns the toolset working in ws, unless a run's context names
// another workspace (workspace.WithWorkspace).
func New(ws *workspace.Workspace) *Toolset {
	t := &Toolset{ws: ws, tracker: newTracker(maxSessions, maxFilesPerSession), seed: maphash.MakeSeed()}
	t.tools = []tool.Tool{
		define(Read, tool.KindRead, readDescription, t.read, pathLocation(t, func(a readArgs) (string, int) { return a.FilePath, max(a.Offset, 0) }),
			func(a readArgs) string { return "Read " + t.display(a.FilePath) }),
		define(Write, tool.KindEdit, writeDescription, t.write, pathLocation(t, func(a writeArgs) (string, int) { return a.FilePath, 0 }),
			func(a writeArgs) string { return "Write " + t.display(a.FilePath) }),
		define(Edit, tool.KindEdit, editDescription, t.edit, pathLocation(t, func(a editArgs) (string, int) { return a.FilePath, 0 }),
			func(a editArgs) string { return "Edit " + t.display(a.FilePath) }),
		define(Glob, tool.KindSearch, globDescription, t.glob, pathLocation(t, func(a globArgs) (string, int) { return cmp.Or(a.Path, "."), 0 }),
			func(a globArgs) string { return "Glob " + quote(a.Pattern) + t.in(a.Path) }),
		define(Grep, tool.KindSearch, grepDescription, t.grep, pathLocation(t, func(a grepArgs) (string, int) { return cmp.Or(a.Path, "."), 0 }),
			func(a grepArgs) string { return "Grep " + quote(a.Pattern) + t.in(a.Path) }),
		define(LS, tool.KindRead, lsDescription, t.ls, pathLocation(t, func(a lsArgs) (string, int) { return cmp.Or(a.Path, "."), 0 }),
			func(a lsArgs) string {
				if a.Path == "" {
					return "LS ."
				}
				return "LS " + t.display(a.Path)
			}),
	}
	return t
}

// Tools returns Read, Write, Edit, Glob, Grep and LS, in that order.
func (t *Toolset) Tools() []tool.Tool {
	return append([]tool.Tool(nil), t.tools...)
}

// fileTool is one tool of the set: a typed tool plus its ACP kind, the
// locations and the title of a call. It implements tool.Locator and
// tool.Titler itself (tool.WithKind would hide them).
type fileTool struct {
	inner  tool.Tool
	info   tool.Info
	locate func(tool.Call) []tool.Location
	title  func(tool.Call) string
}

func define[A any](name, kind, description string, run func(context.Context, tool.Call, A) tool.Result,
	locate func(A) []tool.Location, title func(A) string) tool.Tool {
	inner := tool.New(name, description, func(ctx context.Context, call tool.Call, a A) (tool.Result, error) {
		return run(ctx, call, a), nil
	})
	info := inner.Info()
	info.Kind = kind
	decode := func(call tool.Call) (A, bool) {
		var a A
		return a, len(call.Args) > 0 && json.Unmarshal(call.Args, &a) == nil
	}
	return &fileTool{
		inner: inner,
		info:  info,
		locate: func(call tool.Call) []tool.Location {
			if a, ok := decode(call); ok {
				return locate(a)
			}
			return nil
		},
		title: func(call tool.Call) string {
			if a, ok := decode(call); ok {
				return clean(title(a))
			}
			return ""
		},
	}
}

func (f *fileTool) Info() tool.Info { return f.info }

// Call runs the tool and makes sure its result holds valid UTF-8 only.
func (f *fileTool) Call(ctx context.Context, call tool.Call) (tool.Result, error) {
	res, err := f.inner.Call(ctx, call)
	res.Content = clean(res.Content)
	for i := range res.Locations {
		res.Locations[i].Path = clean(res.Locations[i].Path)
	}
	for i, d := range res.Diffs {
		d.Path = clean(d.Path)
		d.NewText = clean(d.NewText)
		if d.OldText != nil {
			s := clean(*d.OldText)
			d.OldText = &s
		}
		res.Diffs[i] = d
	}
	return res, err
}

// Locations implements tool.Locator.
func (f *fileTool) Locations(call tool.Call) []tool.Location { return f.locate(call) }

// Title implements tool.Titler.
func (f *fileTool) Title(call tool.Call) string { return f.title(call) }

// pathLocation builds a locator from an input's path and line. Without a
// context it judges the path with the toolset's own workspace; a path that
// is empty or does not resolve names no location.
func pathLocation[A any](t *Toolset, get func(A) (string, int)) func(A) []tool.Location {
	return func(a A) []tool.Location {
		p, line := get(a)
		if t.ws == nil || p == "" {
			return nil
		}
		abs, err := t.ws.Resolve(p)
		if err != nil {
			return nil
		}
		return []tool.Location{{Path: abs, Line: line}}
	}
}

// display shows p relative to the toolset's root when it is inside it.
func (t *Toolset) display(p string) string {
	if t.ws == nil || p == "" {
		return p
	}
	abs := p
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(t.ws.Root(), abs)
	}
	abs = filepath.Clean(abs)
	if !t.ws.Contains(abs) {
		return p
	}
	return t.ws.Rel(abs)
}

func (t *Toolset) in(p string) string {
	if p == "" {
		return ""
	}
	return " in " + t.display(p)
}

func quote(s string) string {
	if len(s) > 80 {
		s = string([]rune(s)[:min(len([]rune(s)), 77)]) + "..."
	}
	return `"` + s + `"`
}

// workspace returns the run's workspace.
func (t *Toolset) workspace(ctx context.Context) *workspace.Workspace {
	return workspace.From(ctx, t.ws)
}

// open opens the run's workspace for the file accesses of one call: every
// access goes through the returned root (close it when done), so none
// leaves the workspace, whatever a path turns into after confine judged it.
// On failure it returns the error result to give back to the model.
func (t *Toolset) open(ctx context.Context) (*workspace.Root, *tool.Result) {
	ws := t.workspace(ctx)
	if ws == nil {
		r := tool.Errorf("No workspace is configured, so files cannot be accessed.")
		return nil, &r
	}
	root, err := ws.Open()
	if err != nil {
		r := tool.Errorf("Cannot open the workspace: %v", err)
		return nil, &r
	}
	return root, nil
}

// confine resolves p in the workspace of root, refusing a path outside it.
// field names the argument (an empty file_path is an error, an empty path
// the root). On failure it returns the error result to give back to the
// model.
func confine(root *workspace.Root, p, field string) (string, *tool.Result) {
	if p == "" {
		p = "."
		if field == "file_path" {
			r := tool.Errorf("file_path is required.")
			return "", &r
		}
	}
	abs, err := root.Workspace().Resolve(p)
	if err != nil {
		var r tool.Result
		if errors.Is(err, workspace.ErrOutside) {
			r = tool.Errorf("Access denied: %v. Use a path inside the workspace; relative paths are taken from its root.", err)
		} else {
			r = tool.Errorf("Cannot use path %s: %v", p, err)
		}
		return "", &r
	}
	return abs, nil
}

// clean replaces invalid UTF-8 by U+FFFD.
func clean(s string) string { return strings.ToValidUTF8(s, "\uFFFD") }

func plural(n int, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}
