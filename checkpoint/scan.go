package checkpoint

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sync"
	"time"

	"github.com/agentpool/agentpool/internal/gitignore"
)

// Bounds of a workspace scan (docs/checkpoints.md, "Tools we cannot
// see"): past them a scan stops or keeps no content, and the call's
// result says so.
var (
	scanMaxFiles          = 20_000          // files looked at per scan
	scanMaxTime           = 3 * time.Second // per scan
	scanMaxFileSize int64 = 4 << 20         // bytes kept of one file
	scanMaxBytes    int64 = 64 << 20        // bytes kept per workspace
	// scanMaxIgnoreFile bounds the bytes read of one .gitignore.
	scanMaxIgnoreFile int64 = 1 << 20
)

// fileState is a regular file as a scan saw it, with its bytes when they
// were kept.
type fileState struct {
	size    int64
	mtime   int64 // UnixNano
	mode    fs.FileMode
	content []byte
	kept    bool
}

func (a fileState) same(b fileState) bool {
	return a.size == b.size && a.mtime == b.mtime && a.mode == b.mode
}

// snapshot is a workspace's regular files (slash paths relative to its
// root) but those its .gitignore files ignore; short names why it is
// incomplete ("" when complete).
type snapshot struct {
	files map[string]fileState
	short string
	ign   *gitignore.Matcher // the .gitignore files read (nil: none)
}

// ignored reports whether the snapshot's .gitignore files ignore the file
// at rel: a file the scan did not look at.
func (s *snapshot) ignored(rel string) bool {
	return s.ign != nil && s.ign.Ignored(rel, false)
}

// scanner scans workspaces and keeps, per workspace, the last snapshot, so
// that a file whose size, time and mode did not change is not read again.
type scanner struct {
	mu   sync.Mutex
	last map[string]*snapshot // by root
}

// scan walks root within the bounds, keeping the bytes of small files. It
// skips .git and what the workspace's .gitignore files ignore (read as the
// walk reaches their directory): an ignored directory is not entered, and
// an ignored file counts against no bound.
func (s *scanner) scan(root string) *snapshot {
	s.mu.Lock()
	prev := s.last[root]
	s.mu.Unlock()
	snap := &snapshot{files: map[string]fileState{}, ign: &gitignore.Matcher{}}
	var kept int64
	deadline := time.Now().Add(scanMaxTime)
	errStop := fmt.Errorf("stop")
	// Through an os.Root: a path swapped for a symbolic link between the
	// walk's look and the read cannot lead the scan out of the workspace.
	r, err := os.OpenRoot(root)
	if err != nil {
		snap.short = err.Error()
		return snap
	}
	defer r.Close()
	err = fs.WalkDir(r.FS(), ".", func(rel string, d fs.DirEntry, err error) error {
		if err != nil {
			if rel == "." {
				return err
			}
			return nil // gone or unreadable: not ours to capture
		}
		if time.Now().After(deadline) {
			snap.short = fmt.Sprintf("the scan took more than %s", scanMaxTime)
			return errStop
		}
		if d.IsDir() {
			if rel != "." && (d.Name() == ".git" || snap.ign.Match(rel, true)) {
				return filepath.SkipDir
			}
			if rel == "." {
				rel = ""
			}
			if b := readIgnore(r, path.Join(rel, ".gitignore")); b != nil {
				snap.ign.Add(rel, b)
			}
			return nil
		}
		if !d.Type().IsRegular() || snap.ign.Match(rel, false) {
			return nil
		}
		if len(snap.files) >= scanMaxFiles {
			snap.short = fmt.Sprintf("more than %d files", scanMaxFiles)
			return errStop
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		st := fileState{size: info.Size(), mtime: info.ModTime().UnixNano(), mode: info.Mode().Perm()}
		if st.size <= scanMaxFileSize && kept+st.size <= scanMaxBytes {
			if old, ok := prevFile(prev, rel); ok && old.kept && old.same(st) {
				st.content, st.kept = old.content, true
			} else if b, err := r.ReadFile(rel); err == nil && int64(len(b)) == st.size {
				st.content, st.kept = b, true
			}
			if st.kept {
				kept += st.size
			}
		}
		snap.files[rel] = st
		return nil
	})
	if err != nil && err != errStop {
		snap.short = err.Error()
	}
	s.mu.Lock()
	if s.last == nil {
		s.last = map[string]*snapshot{}
	}
	s.last[root] = snap
	s.mu.Unlock()
	return snap
}

// readIgnore is the content of the .gitignore file at p, up to its
// bound; nil when there is none (or it cannot be read: then nothing is
// ignored by it, and its files are scanned).
func readIgnore(r *os.Root, p string) []byte {
	f, err := r.Open(p)
	if err != nil {
		return nil
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, scanMaxIgnoreFile))
	if err != nil {
		return nil
	}
	return b
}

func prevFile(prev *snapshot, rel string) (fileState, bool) {
	if prev == nil {
		return fileState{}, false
	}
	f, ok := prev.files[rel]
	return f, ok
}

// changed returns the paths created, changed or removed from before to
// after. A path one of the two scans did not look at, because it stopped
// short (the caller says so) or because the .gitignore files it read
// ignore the path (a .gitignore that changed in between), is not
// reported: what it was, or is, is not known.
func changed(before, after *snapshot) []string {
	var out []string
	for p, b := range before.files {
		if a, ok := after.files[p]; ok {
			if !a.same(b) {
				out = append(out, p)
			}
		} else if after.short == "" && !after.ignored(p) {
			out = append(out, p)
		}
	}
	if before.short == "" {
		for p := range after.files {
			if _, ok := before.files[p]; !ok && !before.ignored(p) {
				out = append(out, p)
			}
		}
	}
	return out
}
