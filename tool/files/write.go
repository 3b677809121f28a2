package files

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/agentpool/agentpool/tool"
	"github.com/agentpool/agentpool/tool/workspace"
)

const writeDescription = "Write a file: create it (and its missing parent directories) or replace its whole " +
	"content. To replace an existing file you must have read it with Read in this session, and it must not " +
	"have changed since; prefer Edit for changing part of an existing file, as it sends only the change. " +
	"file_path may be absolute or relative to the workspace root and must lie inside the workspace. The file " +
	"keeps its permissions and is replaced atomically."

const editDescription = "Edit a file by replacing an exact string: old_string must appear in the file exactly " +
	"as given (whitespace and indentation included, without the line-number prefix that Read shows) and, " +
	"unless replace_all is true, exactly once - give enough surrounding lines to make it unique. Set " +
	"replace_all to replace every occurrence (for example to rename a variable). You must have read the file " +
	"with Read in this session, and it must not have changed since; your own earlier edits count as reads. " +
	"The file keeps its line endings and permissions. An empty old_string creates a file that does not exist yet."

type writeArgs struct {
	FilePath string `json:"file_path" jsonschema:"description=The file to write: absolute or relative to the workspace root"`
	Content  string `json:"content" jsonschema:"description=The whole new content of the file"`
}

type editArgs struct {
	FilePath   string `json:"file_path" jsonschema:"description=The file to change: absolute or relative to the workspace root"`
	OldString  string `json:"old_string" jsonschema:"description=The exact text to replace"`
	NewString  string `json:"new_string" jsonschema:"description=The text to put in its place (must differ from old_string)"`
	ReplaceAll bool   `json:"replace_all,omitempty" jsonschema:"description=Replace every occurrence of old_string (default false: it must occur exactly once)"`
}

// Error texts of the read-before-write rule (Claude Code's wording).
const (
	errNotRead  = "File has not been read yet. Read it first before writing to it."
	errModified = "File has been modified since read, either by the user or by another program. Read it again before attempting to write it."
)

// maxEditBytes bounds the files Edit loads.
const maxEditBytes = 64 << 20

// target is a file about to be changed, as it is now.
type target struct {
	abs    string
	info   fs.FileInfo // nil when it does not exist on disk
	exists bool
	text   *string // its content, when loaded
	fsys   workspace.FS
	root   *workspace.Root // the disk, when fsys is nil
}

// load finds out whether abs exists and, when wantText (or a front end's
// FS is in use), loads its content.
func (t *Toolset) load(ctx context.Context, root *workspace.Root, abs string, wantText bool) (*target, *tool.Result) {
	info, err := statFile(root, abs)
	if err != nil {
		r := tool.Errorf("Cannot access %s: %v", abs, err)
		return nil, &r
	}
	if info != nil && info.IsDir() {
		r := tool.Errorf("%s is a directory, not a file.", abs)
		return nil, &r
	}
	if info != nil && !info.Mode().IsRegular() {
		r := tool.Errorf("%s is not a regular file (%v); it cannot be written.", abs, info.Mode().Type())
		return nil, &r
	}
	tg := &target{abs: abs, info: info, exists: info != nil, fsys: workspace.FSFrom(ctx), root: root}
	if tg.fsys != nil {
		s, err := tg.fsys.ReadTextFile(ctx, abs, 0, 0)
		switch {
		case err == nil:
			tg.text, tg.exists = &s, true
		case tg.exists:
			r := tool.Errorf("Cannot read %s through the editor: %v", abs, err)
			return nil, &r
		}
		return tg, nil
	}
	if tg.exists && wantText {
		if info.Size() > maxEditBytes {
			r := tool.Errorf("%s is too large to edit (%d bytes; the limit is %d).", abs, info.Size(), maxEditBytes)
			return nil, &r
		}
		if r := tg.loadText(); r != nil {
			return nil, r
		}
	}
	return tg, nil
}

func (tg *target) loadText() *tool.Result {
	b, err := readRegular(tg.root, tg.abs)
	if err != nil {
		r := tool.Errorf("Cannot read %s: %v", tg.abs, err)
		return &r
	}
	s := string(b)
	tg.text = &s
	return nil
}

// checkRead applies the read-before-write rule to an existing file.
func (t *Toolset) checkRead(session string, tg *target) *tool.Result {
	rec, ok := t.tracker.get(session, tg.abs)
	if !ok {
		r := tool.Errorf(errNotRead)
		return &r
	}
	if t.changed(rec, tg.info, tg.text) && rec.hashed && tg.text == nil && tg.info != nil && tg.info.Size() <= maxCountBytes {
		// Its size or time moved: compare the content.
		if r := tg.loadText(); r != nil {
			return r
		}
	}
	if t.changed(rec, tg.info, tg.text) {
		r := tool.Errorf(errModified)
		return &r
	}
	return nil
}

// store writes content to the file (through the front end's FS when there
// is one) and records it as read by session.
func (t *Toolset) store(ctx context.Context, call tool.Call, tg *target, content string) *tool.Result {
	if r := t.checkpoint(ctx, call, tg); r != nil {
		return r
	}
	session := call.SessionID
	if err := tg.root.MkdirAll(filepath.Dir(tg.abs), 0o755); err != nil && tg.fsys == nil {
		r := tool.Errorf("Cannot create the directory of %s: %v", tg.abs, err)
		return &r
	}
	if tg.fsys != nil {
		if err := tg.fsys.WriteTextFile(ctx, tg.abs, content); err != nil {
			r := tool.Errorf("Cannot write %s through the editor: %v", tg.abs, err)
			return &r
		}
	} else {
		perm := fs.FileMode(0o644)
		if tg.info != nil {
			perm = tg.info.Mode() & (fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky)
		}
		if err := writeAtomic(tg.root, tg.abs, content, perm); err != nil {
			r := tool.Errorf("Cannot write %s: %v", tg.abs, err)
			return &r
		}
	}
	info, _ := statFile(tg.root, tg.abs)
	t.tracker.set(session, tg.abs, t.stateOf(info, &content))
	return nil
}

// writeAtomic replaces path with data: a temporary file in the same
// directory, synced, then renamed over it, all through root.
func writeAtomic(root *workspace.Root, path, data string, perm fs.FileMode) (err error) {
	dir, base := filepath.Split(path)
	prefix := "." + base + "."
	if len(base) > 200 {
		prefix = ".agentpool-write-"
	}
	f, tmp, err := createTemp(root, dir, prefix, ".tmp")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			root.Remove(tmp)
		}
	}()
	if _, err = f.WriteString(data); err != nil {
		return err
	}
	if err = f.Chmod(perm); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	return root.Rename(tmp, path)
}

// createTemp creates a new file in dir through root, named prefix, a
// random number and suffix, as os.CreateTemp does.
func createTemp(root *workspace.Root, dir, prefix, suffix string) (*os.File, string, error) {
	for range 10000 {
		name := filepath.Join(dir, prefix+strconv.FormatUint(uint64(rand.Uint32()), 10)+suffix)
		f, err := root.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
		if !errors.Is(err, fs.ErrExist) {
			return f, name, err
		}
	}
	return nil, "", &fs.PathError{Op: "createtemp", Path: filepath.Join(dir, prefix+"*"+suffix), Err: fs.ErrExist}
}

// diff is the whole-file change, omitted for files over maxDiffBytes.
func diff(abs string, old *string, exists bool, content string) []tool.Diff {
	if len(content) > maxDiffBytes || (exists && (old == nil || len(*old) > maxDiffBytes)) {
		return nil
	}
	d := tool.Diff{Path: abs, NewText: content}
	if exists {
		o := *old
		d.OldText = &o
	}
	return []tool.Diff{d}
}

func countText(s string) int {
	if s == "" {
		return 0
	}
	n := strings.Count(s, "\n")
	if !strings.HasSuffix(s, "\n") {
		n++
	}
	return n
}

func (t *Toolset) write(ctx context.Context, call tool.Call, a writeArgs) tool.Result {
	root, errRes := t.open(ctx)
	if errRes != nil {
		return *errRes
	}
	defer root.Close()
	abs, errRes := confine(root, a.FilePath, "file_path")
	if errRes != nil {
		return *errRes
	}
	defer t.lockPath(abs)()
	tg, errRes := t.load(ctx, root, abs, false)
	if errRes != nil {
		return *errRes
	}
	if tg.exists {
		if tg.text == nil && tg.info.Size() <= maxDiffBytes { // for the diff
			if errRes := tg.loadText(); errRes != nil {
				return *errRes
			}
		}
		if errRes := t.checkRead(call.SessionID, tg); errRes != nil {
			return *errRes
		}
	}
	if errRes := t.store(ctx, call, tg, a.Content); errRes != nil {
		return *errRes
	}
	verb := "Created"
	if tg.exists {
		verb = "Overwrote"
	}
	lines := countText(a.Content)
	return tool.Result{
		Content:   fmt.Sprintf("%s %s (%s, %s).", verb, abs, plural(lines, "line", "lines"), plural(len(a.Content), "byte", "bytes")),
		Locations: []tool.Location{{Path: abs}},
		Diffs:     diff(abs, tg.text, tg.exists, a.Content),
		Metadata:  map[string]any{"created": !tg.exists, "lines": lines, "bytes": len(a.Content)},
	}
}

// checkpoint tells the checkpointer, if any, of the change about to be
// made to tg (the path's lock is held).
func (t *Toolset) checkpoint(ctx context.Context, call tool.Call, tg *target) *tool.Result {
	if t.cp == nil || call.SessionID == "" {
		return nil
	}
	ws := tg.root.Workspace()
	c := workspace.Change{SessionID: call.SessionID, MessageID: call.MessageID, ToolCallID: call.ID,
		Root: ws.Root(), Path: filepath.ToSlash(ws.Rel(tg.abs))}
	err := t.cp.Before(ctx, c, func() (workspace.Prior, error) {
		if !tg.exists {
			return workspace.Prior{}, nil
		}
		p := workspace.Prior{Exists: true, Mode: 0o644}
		if tg.info != nil {
			p.Mode = tg.info.Mode().Perm()
			if tg.info.Size() > maxEditBytes {
				return p, fmt.Errorf("%d bytes; the limit is %d", tg.info.Size(), maxEditBytes)
			}
		}
		if tg.text != nil {
			p.Content = []byte(*tg.text)
			return p, nil
		}
		b, err := readRegular(tg.root, tg.abs)
		p.Content = b
		return p, err
	})
	if err != nil {
		r := tool.Errorf("Cannot checkpoint %s before changing it, so it was not changed: %v", tg.abs, err)
		return &r
	}
	return nil
}
