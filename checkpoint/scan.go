package checkpoint

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// Bounds of a workspace scan (docs/checkpoints.md, "Tools we cannot
// see"): past them a scan stops or keeps no content, and the call's
// result says so.
var (
	scanMaxFiles          = 20_000          // files looked at per scan
	scanMaxTime           = 3 * time.Second // per scan
	scanMaxFileSize int64 = 4 << 20         // bytes kept of one file
	scanMaxBytes    int64 = 64 << 20        // bytes kept per workspace
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
// root); short names why it is incomplete ("" when complete).
type snapshot struct {
	files map[string]fileState
	short string
}

// scanner scans workspaces and keeps, per workspace, the last snapshot, so
// that a file whose size, time and mode did not change is not read again.
type scanner struct {
	mu   sync.Mutex
	last map[string]*snapshot // by root
}

// scan walks root (skipping .git), within the bounds, keeping the bytes
// of small files.
func (s *scanner) scan(root string) *snapshot {
	s.mu.Lock()
	prev := s.last[root]
	s.mu.Unlock()
	snap := &snapshot{files: map[string]fileState{}}
	var kept int64
	deadline := time.Now().Add(scanMaxTime)
	errStop := fmt.Errorf("stop")
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == root {
				return err
			}
			return nil // gone or unreadable: not ours to capture
		}
		if d.IsDir() {
			if d.Name() == ".git" && p != root {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		if len(snap.files) >= scanMaxFiles {
			snap.short = fmt.Sprintf("more than %d files", scanMaxFiles)
			return errStop
		}
		if time.Now().After(deadline) {
			snap.short = fmt.Sprintf("the scan took more than %s", scanMaxTime)
			return errStop
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return nil
		}
		rel = filepath.ToSlash(rel)
		st := fileState{size: info.Size(), mtime: info.ModTime().UnixNano(), mode: info.Mode().Perm()}
		if st.size <= scanMaxFileSize && kept+st.size <= scanMaxBytes {
			if old, ok := prevFile(prev, rel); ok && old.kept && old.same(st) {
				st.content, st.kept = old.content, true
			} else if b, err := os.ReadFile(p); err == nil && int64(len(b)) == st.size {
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

func prevFile(prev *snapshot, rel string) (fileState, bool) {
	if prev == nil {
		return fileState{}, false
	}
	f, ok := prev.files[rel]
	return f, ok
}

// changed returns the paths created, changed or removed from before to
// after. A path one of the two scans did not reach because it stopped
// short is not reported (the caller says the scan was short).
func changed(before, after *snapshot) []string {
	var out []string
	for p, b := range before.files {
		if a, ok := after.files[p]; ok {
			if !a.same(b) {
				out = append(out, p)
			}
		} else if after.short == "" {
			out = append(out, p)
		}
	}
	if before.short == "" {
		for p := range after.files {
			if _, ok := before.files[p]; !ok {
				out = append(out, p)
			}
		}
	}
	return out
}
