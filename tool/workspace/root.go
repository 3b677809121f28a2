package workspace

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Root is the workspace opened for file access: every method reaches its
// path through an os.Root, so what it opens, creates, renames or lists is
// below the root directory whatever the path's components turned into
// after Resolve judged them. A component swapped for a symbolic link that
// leads out of the root (or for any absolute link) makes the access fail;
// it never reaches the outside. Paths are absolute, as Resolve returns
// them; a path outside the root is an error wrapping ErrOutside. Errors
// name the absolute path.
//
// A Root holds a descriptor of the root directory: Close it when done. It
// is safe for concurrent use.
type Root struct {
	w *Workspace
	r *os.Root
}

// Open opens the root directory for file access.
func (w *Workspace) Open() (*Root, error) {
	r, err := os.OpenRoot(w.root)
	if err != nil {
		return nil, fmt.Errorf("workspace %s: %w", w.root, err)
	}
	return &Root{w: w, r: r}, nil
}

// Workspace returns the workspace r was opened from.
func (r *Root) Workspace() *Workspace { return r.w }

// Close releases the root directory's descriptor.
func (r *Root) Close() error { return r.r.Close() }

// Stat returns the file info of abs, following symbolic links that stay
// inside the root.
func (r *Root) Stat(abs string) (fs.FileInfo, error) {
	name, err := r.name(abs)
	if err != nil {
		return nil, err
	}
	info, err := r.r.Stat(name)
	return info, named(err, abs)
}

// OpenFile opens abs as os.OpenFile does.
func (r *Root) OpenFile(abs string, flag int, perm fs.FileMode) (*os.File, error) {
	name, err := r.name(abs)
	if err != nil {
		return nil, err
	}
	f, err := r.r.OpenFile(name, flag, perm)
	return f, named(err, abs)
}

// ReadDir returns the entries of the directory abs sorted by name, as
// os.ReadDir does.
func (r *Root) ReadDir(abs string) ([]fs.DirEntry, error) {
	name, err := r.name(abs)
	if err != nil {
		return nil, err
	}
	d, err := r.r.Open(name)
	if err != nil {
		return nil, named(err, abs)
	}
	defer d.Close()
	entries, err := d.ReadDir(-1)
	slices.SortFunc(entries, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return entries, named(err, abs)
}

// MkdirAll creates the directory abs and its missing parents.
func (r *Root) MkdirAll(abs string, perm fs.FileMode) error {
	name, err := r.name(abs)
	if err != nil {
		return err
	}
	return named(r.r.MkdirAll(name, perm), abs)
}

// Rename renames from to to, replacing to (a symbolic link at to is
// replaced, not followed).
func (r *Root) Rename(from, to string) error {
	src, err := r.name(from)
	if err != nil {
		return err
	}
	dst, err := r.name(to)
	if err != nil {
		return err
	}
	err = r.r.Rename(src, dst)
	var le *os.LinkError
	if errors.As(err, &le) {
		le.Old, le.New = from, to
	}
	return err
}

// Remove removes the file or empty directory abs.
func (r *Root) Remove(abs string) error {
	name, err := r.name(abs)
	if err != nil {
		return err
	}
	return named(r.r.Remove(name), abs)
}

// name maps abs to its name below the root ("." for the root).
func (r *Root) name(abs string) (string, error) {
	if !filepath.IsAbs(abs) {
		return "", fmt.Errorf("%s: not an absolute path", abs)
	}
	abs = filepath.Clean(abs)
	if !r.w.Contains(abs) {
		return "", fmt.Errorf("%s is %w %s", abs, ErrOutside, r.w.root)
	}
	return r.w.Rel(abs), nil
}

// named makes a path error name abs instead of the name below the root.
func named(err error, abs string) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		pe.Path = abs
	}
	return err
}
