package files

import (
	"container/list"
	"hash/fnv"
	"hash/maphash"
	"io/fs"
	"sync"
	"time"
)

const (
	maxSessions        = 4096   // sessions whose reads are remembered
	maxFilesPerSession = 10_000 // files remembered per session
)

// readState is what a session saw of a file when it last read or wrote it.
type readState struct {
	size   int64
	mtime  time.Time
	hash   uint64 // of the whole content, when hashed
	hashed bool
}

// tracker remembers, per session, the files a session has read: the state
// of each when read. It keeps the most recently used sessions only.
type tracker struct {
	mu       sync.Mutex
	max      int
	maxFiles int
	order    *list.List               // of *sessionReads, most recent first
	sessions map[string]*list.Element // session id -> element of order
}

type sessionReads struct {
	id    string
	files map[string]readState
}

func newTracker(maxSessions, maxFiles int) *tracker {
	return &tracker{max: maxSessions, maxFiles: maxFiles, order: list.New(), sessions: map[string]*list.Element{}}
}

// get returns what session saw of path.
func (t *tracker) get(session, path string) (readState, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e, ok := t.sessions[session]
	if !ok {
		return readState{}, false
	}
	t.order.MoveToFront(e)
	st, ok := e.Value.(*sessionReads).files[path]
	return st, ok
}

// set records what session saw of path.
func (t *tracker) set(session, path string, st readState) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e, ok := t.sessions[session]
	if ok {
		t.order.MoveToFront(e)
	} else {
		e = t.order.PushFront(&sessionReads{id: session, files: map[string]readState{}})
		t.sessions[session] = e
		for t.order.Len() > t.max {
			last := t.order.Back()
			t.order.Remove(last)
			delete(t.sessions, last.Value.(*sessionReads).id)
		}
	}
	files := e.Value.(*sessionReads).files
	if _, known := files[path]; !known && len(files) >= t.maxFiles {
		for p := range files { // forget any one file: it must be read again
			delete(files, p)
			break
		}
	}
	files[path] = st
}

// len returns the number of sessions remembered.
func (t *tracker) len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.sessions)
}

// stateOf returns the disk state of a file, with content's hash when
// content is known.
func (t *Toolset) stateOf(info fs.FileInfo, content *string) readState {
	var st readState
	if info != nil {
		st.size, st.mtime = info.Size(), info.ModTime()
	}
	if content != nil {
		st.hash, st.hashed = maphash.String(t.seed, *content), true
	}
	return st
}

// changed reports whether a file differs from what was recorded: info
// is its state on disk now (nil when absent), content its text now when
// known. When both the recorded and the current content are known, their
// hashes decide (a file rewritten unchanged is not "modified"); otherwise
// a change of size or modification time does.
func (t *Toolset) changed(rec readState, info fs.FileInfo, content *string) bool {
	if rec.hashed && content != nil {
		return maphash.String(t.seed, *content) != rec.hash
	}
	return info == nil || info.Size() != rec.size || !info.ModTime().Equal(rec.mtime)
}

// lockPath serialises Write and Edit of one file (striped by path).
func (t *Toolset) lockPath(path string) func() {
	h := fnv.New32a()
	h.Write([]byte(path))
	m := &t.locks[h.Sum32()%uint32(len(t.locks))]
	m.Lock()
	return m.Unlock
}
