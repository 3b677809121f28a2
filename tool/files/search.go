package files

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/agentpool/agentpool/tool"
	"github.com/agentpool/agentpool/tool/workspace"
)

const globDescription = "Find files by name with a glob pattern, such as `**/*.go`, `src/**/*.ts`, `*.{yml,yaml}` or " +
	"`cmd/*/main.go`: `*` matches within one path segment, `**` any number of directories, `{a,b}` either " +
	"alternative. The pattern is matched against paths relative to path (default: the workspace root), so " +
	"`*.go` finds only the Go files directly in it. Returns absolute paths, most recently modified first, at " +
	"most 100. Version-control directories are skipped. Use Grep to search file contents."

const lsDescription = "List a directory as an indented tree: its files and subdirectories, recursively, " +
	"directories marked with a trailing `/`, shallow entries first and at most 1000 entries in all. path " +
	"defaults to the workspace root; ignore takes glob patterns (like `*.log` or `node_modules`) of names " +
	"or relative paths to leave out. Version-control directories are shown but not entered. Prefer Glob or " +
	"Grep when you know what you are looking for."

type globArgs struct {
	Pattern string `json:"pattern" jsonschema:"description=The glob pattern to match file paths against (relative to path)"`
	Path    string `json:"path,omitempty" jsonschema:"description=The directory to search in (default: the workspace root)"`
}

type lsArgs struct {
	Path   string   `json:"path,omitempty" jsonschema:"description=The directory to list: absolute or relative to the workspace root (default: the root)"`
	Ignore []string `json:"ignore,omitempty" jsonschema:"description=Glob patterns of names or relative paths to leave out"`
}

// vcsDirs are directories that Glob and Grep skip and LS does not enter.
var vcsDirs = map[string]bool{".git": true, ".hg": true, ".svn": true, ".jj": true}

// entry is a file or directory met by a walk.
type entry struct {
	path  string // absolute, below the walk's root (a symlink's own path)
	real  string // the path to open: path, or a symlink's target
	rel   string // relative to the walk's root, slash-separated
	isDir bool
	link  bool        // a symbolic link (to a file or directory inside the root)
	info  fs.FileInfo // of the target for a link; else loaded on demand
	d     fs.DirEntry
}

func (e *entry) stat() fs.FileInfo {
	if e.info == nil {
		if info, err := e.d.Info(); err == nil {
			e.info = info
		}
	}
	return e.info
}

// classify turns a directory entry into an entry: false for what must not
// be shown (a symlink that dangles or leads out of the root, a device or
// socket). A symlink is resolved to the real path inside the root, which
// is what is opened (through root, so a link changed since still cannot
// lead out).
func classify(root *workspace.Root, p, rel string, d fs.DirEntry) (entry, bool) {
	e := entry{path: p, real: p, rel: rel, d: d}
	switch t := d.Type(); {
	case t.IsDir():
		e.isDir = true
	case t.IsRegular():
	case t&fs.ModeSymlink != 0:
		real, err := filepath.EvalSymlinks(p)
		if err != nil || !root.Workspace().Contains(real) {
			return e, false
		}
		info, err := root.Stat(real)
		if err != nil || !(info.IsDir() || info.Mode().IsRegular()) {
			return e, false
		}
		e.real, e.link, e.info, e.isDir = real, true, info, info.IsDir()
	default:
		return e, false
	}
	return e, true
}

// walk visits, in lexical order, the files and directories below dir
// (which must be resolved and inside the root), reading them through
// root. It skips version-control directories, does not enter symlinked
// directories, and enters a real directory only when descend allows it
// (nil: always). An unreadable entry is left out; an unreadable dir is an
// error.
func walk(ctx context.Context, root *workspace.Root, dir string, descend func(rel string) bool, visit func(e *entry) error) error {
	n := 0
	var walkDir func(abs, rel string) error
	walkDir = func(abs, rel string) error {
		ds, err := root.ReadDir(abs)
		if err != nil {
			if rel == "" {
				return err
			}
			return nil
		}
		for _, d := range ds {
			if n++; n%256 == 0 && ctx.Err() != nil {
				return ctx.Err()
			}
			if d.IsDir() && vcsDirs[d.Name()] {
				continue
			}
			e, ok := classify(root, filepath.Join(abs, d.Name()), path.Join(rel, d.Name()), d)
			if !ok {
				continue
			}
			if err := visit(&e); err != nil {
				return err
			}
			if d.IsDir() && (descend == nil || descend(e.rel)) {
				if err := walkDir(e.path, e.rel); err != nil {
					return err
				}
			}
		}
		return nil
	}
	return walkDir(dir, "")
}

// dirArg resolves a directory argument (default: the root).
func dirArg(root *workspace.Root, p string) (string, *tool.Result) {
	abs, errRes := confine(root, p, "path")
	if errRes != nil {
		return "", errRes
	}
	info, err := root.Stat(abs)
	switch {
	case os.IsNotExist(err):
		r := tool.Errorf("Directory does not exist: %s", abs)
		return "", &r
	case err != nil:
		r := tool.Errorf("Cannot access %s: %v", abs, err)
		return "", &r
	case !info.IsDir():
		r := tool.Errorf("%s is a file, not a directory. Use Read to read it.", abs)
		return "", &r
	}
	return abs, nil
}

func (t *Toolset) glob(ctx context.Context, _ tool.Call, a globArgs) tool.Result {
	if a.Pattern == "" {
		return tool.Errorf("pattern is required.")
	}
	root, errRes := t.open(ctx)
	if errRes != nil {
		return *errRes
	}
	defer root.Close()
	dir, errRes := dirArg(root, a.Path)
	if errRes != nil {
		return *errRes
	}
	pattern := filepath.ToSlash(a.Pattern)
	base, pat := doublestar.SplitPattern(pattern)
	if !doublestar.ValidatePattern(pat) {
		return tool.Errorf("Invalid glob pattern %q.", a.Pattern)
	}
	if !path.IsAbs(pattern) {
		base = filepath.Join(dir, filepath.FromSlash(base))
	}
	from, errRes := confine(root, base, "path")
	if errRes != nil {
		return *errRes
	}
	descend := prune(pat)
	type match struct {
		path  string
		mtime time.Time
	}
	var matches []match
	if info, err := root.Stat(from); err == nil && info.IsDir() {
		err := walk(ctx, root, from, descend, func(e *entry) error {
			if !e.isDir && doublestar.MatchUnvalidated(pat, e.rel) {
				m := match{path: e.path}
				if info := e.stat(); info != nil {
					m.mtime = info.ModTime()
				}
				matches = append(matches, m)
			}
			return nil
		})
		if err != nil {
			return tool.Errorf("Glob failed: %v", err)
		}
	}
	if len(matches) == 0 {
		return tool.Result{Content: fmt.Sprintf("No files found matching %q in %s.", a.Pattern, dir), Metadata: map[string]any{"matches": 0}}
	}
	sort.SliceStable(matches, func(i, j int) bool {
		if !matches[i].mtime.Equal(matches[j].mtime) {
			return matches[i].mtime.After(matches[j].mtime)
		}
		return matches[i].path < matches[j].path
	})
	var sb strings.Builder
	for _, m := range matches[:min(len(matches), maxGlobResults)] {
		sb.WriteString(m.path + "\n")
	}
	if more := len(matches) - maxGlobResults; more > 0 {
		fmt.Fprintf(&sb, "... %s not shown (%d matched in all); use a narrower pattern or path.\n", plural(more, "more file", "more files"), len(matches))
	}
	return tool.Result{Content: sb.String(), Metadata: map[string]any{"matches": len(matches), "truncated": len(matches) > maxGlobResults}}
}

// prune returns which directories can hold matches of pat: for a pattern
// without `**` or braces, those whose path matches its leading segments.
func prune(pat string) func(rel string) bool {
	if strings.Contains(pat, "**") || strings.ContainsAny(pat, "{}") {
		return nil
	}
	segs := strings.Split(pat, "/")
	return func(rel string) bool {
		depth := strings.Count(rel, "/") + 1
		return depth < len(segs) && doublestar.MatchUnvalidated(strings.Join(segs[:depth], "/"), rel)
	}
}

func (t *Toolset) ls(ctx context.Context, _ tool.Call, a lsArgs) tool.Result {
	root, errRes := t.open(ctx)
	if errRes != nil {
		return *errRes
	}
	defer root.Close()
	dir, errRes := dirArg(root, a.Path)
	if errRes != nil {
		return *errRes
	}
	for _, p := range a.Ignore {
		if !doublestar.ValidatePattern(p) {
			return tool.Errorf("Invalid ignore pattern %q.", p)
		}
	}
	ignored := func(name, rel string) bool {
		for _, p := range a.Ignore {
			p = strings.TrimSuffix(p, "/")
			if doublestar.MatchUnvalidated(p, name) || doublestar.MatchUnvalidated(p, rel) {
				return true
			}
		}
		return false
	}
	// Breadth first, so that a cut keeps the shallow entries.
	children := map[string][]entry{} // rel of a directory -> its entries
	queue := []string{"."}
	count, cut := 0, false
	for len(queue) > 0 && !cut {
		if ctx.Err() != nil {
			return tool.Errorf("LS cancelled: %v", ctx.Err())
		}
		rel := queue[0]
		queue = queue[1:]
		ds, err := root.ReadDir(filepath.Join(dir, filepath.FromSlash(rel)))
		if err != nil {
			continue
		}
		for _, d := range ds {
			crel := path.Join(rel, d.Name())
			if ignored(d.Name(), crel) {
				continue
			}
			e, ok := classify(root, filepath.Join(dir, filepath.FromSlash(crel)), crel, d)
			if !ok {
				continue
			}
			if count == maxLSEntries {
				cut = true
				break
			}
			count++
			children[rel] = append(children[rel], e)
			if e.isDir && !e.link && !vcsDirs[d.Name()] {
				queue = append(queue, crel)
			}
		}
	}
	var sb strings.Builder
	if cut {
		fmt.Fprintf(&sb, "Listing cut at %d entries: some entries are not shown. List a subdirectory, or use Glob to find specific files.\n", maxLSEntries)
	}
	sb.WriteString("- " + strings.TrimSuffix(dir, string(filepath.Separator)) + string(filepath.Separator) + "\n")
	var print func(rel string, depth int)
	print = func(rel string, depth int) {
		for _, e := range children[rel] {
			name := e.d.Name()
			if e.isDir {
				name += "/"
			}
			sb.WriteString(strings.Repeat("  ", depth) + "- " + name + "\n")
			if e.isDir {
				print(e.rel, depth+1)
			}
		}
	}
	print(".", 1)
	if count == 0 {
		sb.WriteString("  (empty)\n")
	}
	return tool.Result{Content: sb.String(), Locations: []tool.Location{{Path: dir}}, Metadata: map[string]any{"entries": count, "truncated": cut}}
}
