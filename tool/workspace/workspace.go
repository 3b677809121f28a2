package workspace

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Workspace is a root directory. Its zero value is not usable; use New.
type Workspace struct {
	root string // absolute, cleaned, symlinks resolved
}

// ErrOutside is returned for a path that resolves outside the root.
var ErrOutside = errors.New("outside the workspace")

// New returns the workspace rooted at dir, which must be an existing
// directory. A relative dir is taken from the current directory.
func New(dir string) (*Workspace, error) {
	if dir == "" {
		dir = "."
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("workspace %s: %w", dir, err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, fmt.Errorf("workspace %s: %w", dir, err)
	}
	st, err := os.Stat(real)
	if err != nil {
		return nil, fmt.Errorf("workspace %s: %w", dir, err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("workspace %s: not a directory", dir)
	}
	return &Workspace{root: real}, nil
}

// Root returns the absolute root directory (symlinks resolved).
func (w *Workspace) Root() string { return w.root }

// Resolve maps p, relative to the root or absolute, to an absolute path
// inside the root with its existing part's symlinks resolved. A path
// outside the root is an error wrapping ErrOutside that names p and the
// root, fit to show to a model.
func (w *Workspace) Resolve(p string) (string, error) {
	if p == "" {
		return "", errors.New("empty path")
	}
	if strings.IndexByte(p, 0) >= 0 {
		return "", errors.New("path contains a NUL byte")
	}
	abs := p
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(w.root, abs)
	}
	abs = filepath.Clean(abs)
	real, err := evalExisting(abs)
	if err != nil {
		return "", fmt.Errorf("%s: %w", p, err)
	}
	if !w.Contains(real) {
		return "", fmt.Errorf("%s resolves to %s, %w %s", p, real, ErrOutside, w.root)
	}
	return real, nil
}

// Contains reports whether the absolute, cleaned path abs is the root or
// below it (a lexical check: resolve symlinks first, as Resolve does).
func (w *Workspace) Contains(abs string) bool {
	if abs == w.root {
		return true
	}
	prefix := w.root
	if !strings.HasSuffix(prefix, string(filepath.Separator)) {
		prefix += string(filepath.Separator)
	}
	return strings.HasPrefix(abs, prefix)
}

// Rel returns abs relative to the root, for display ("." for the root).
func (w *Workspace) Rel(abs string) string {
	r, err := filepath.Rel(w.root, abs)
	if err != nil {
		return abs
	}
	return r
}

// evalExisting resolves the symlinks of the longest existing prefix of abs
// and appends the rest unchanged.
func evalExisting(abs string) (string, error) {
	rest := ""
	cur := abs
	for {
		real, err := filepath.EvalSymlinks(cur)
		if err == nil {
			if rest == "" {
				return real, nil
			}
			return filepath.Join(real, rest), nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			// A loop, a permission problem or a dangling link: if cur
			// itself is a dangling symlink, judge where it points.
			return "", err
		}
		if target, lerr := os.Readlink(cur); lerr == nil {
			// A dangling symlink: writing through it would create its
			// target, so the target is what must be inside the root.
			if !filepath.IsAbs(target) {
				target = filepath.Join(filepath.Dir(cur), target)
			}
			return evalExisting(filepath.Join(filepath.Clean(target), rest))
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return abs, nil
		}
		rest = filepath.Join(filepath.Base(cur), rest)
		cur = parent
	}
}

type workspaceKey struct{}

// WithWorkspace returns a context whose runs use w instead of the pool's
// workspace (an ACP session's cwd).
func WithWorkspace(ctx context.Context, w *Workspace) context.Context {
	return context.WithValue(ctx, workspaceKey{}, w)
}

// From returns the workspace of ctx, else def.
func From(ctx context.Context, def *Workspace) *Workspace {
	if w, ok := ctx.Value(workspaceKey{}).(*Workspace); ok && w != nil {
		return w
	}
	return def
}
