package agui

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/agentpool/agentpool/id"
	"github.com/agentpool/agentpool/session"
)

// MetadataThreadKey is the session metadata key that records the AG-UI
// threadId of a root session created for a thread whose id is not a
// session id. Stores index it (session.ListOptions.Thread).
const MetadataThreadKey = session.MetaThread

// MaxThreadIDBytes bounds the length of a threadId (400 past it): a
// thread id is kept in memory, in the session's metadata and in every
// event of the run, so it must stay small.
const MaxThreadIDBytes = 256

// threads maps AG-UI thread ids to root session ids.
//
// A threadId that is a session id (ses_ + 26 characters, as the store's
// own ids) is the root session id itself. Any other threadId (the clients
// mint UUIDs) gets a fresh session id; the pair lives in memory and in the
// session's metadata under MetadataThreadKey, so it survives a restart
// with a persistent store.
//
// The table in memory is a cache, bounded: it keeps the max most recently
// used threads, and forgets the least recently used one that no request
// is using when it grows past that. A thread that is not in memory (new,
// forgotten, or from before a restart) is looked up in the store by its
// metadata, which every store indexes (session.ListOptions.Thread): a
// run's lookup costs the same however many threads are stored.
type threads struct {
	store session.Store
	max   int

	mu     sync.Mutex
	byID   map[string]*threadEntry
	recent list.List // of *threadEntry, the most recently used first
}

// threadEntry is one thread in memory.
type threadEntry struct {
	thread, sid string
	users       int // requests using it now; it is never forgotten while > 0
	elem        *list.Element
}

func newThreads(st session.Store, limit int) *threads {
	return &threads{store: st, max: limit, byID: map[string]*threadEntry{}}
}

// errChildThread is returned for a threadId that names a child session.
var errChildThread = errors.New("threadId names a child session; threads are root sessions")

// resolve returns the root session of a thread and whether it exists yet.
// mapped reports that the session id is not the threadId itself. The
// caller calls release when its request is done (the mapping is kept in
// memory at least until then).
func (t *threads) resolve(ctx context.Context, threadID string) (sid string, exists, mapped bool, release func(), err error) {
	release = func() {}
	if validSessionID(threadID) {
		sid = threadID
	} else {
		mapped = true
		var e *threadEntry
		e, err = t.acquire(ctx, threadID)
		if err != nil {
			return "", false, mapped, release, err
		}
		sid, release = e.sid, func() { t.release(e) }
	}
	s, err := t.store.GetSession(ctx, sid)
	switch {
	case errors.Is(err, session.ErrNotFound):
		return sid, false, mapped, release, nil
	case err != nil:
		release()
		return "", false, mapped, func() {}, fmt.Errorf("look up thread %s: %w", threadID, err)
	case s.ParentID != "":
		release()
		return "", false, mapped, func() {}, errChildThread
	}
	return sid, true, mapped, release, nil
}

// acquire finds or allocates the session of a thread whose id is not a
// session id, and holds its entry for a request. An allocation is
// reserved at once, so concurrent first runs of one thread agree on the
// id (and the second one finds it busy).
func (t *threads) acquire(ctx context.Context, threadID string) (*threadEntry, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e := t.byID[threadID]
	if e == nil {
		sid, err := t.findLocked(ctx, threadID)
		if err != nil {
			return nil, err
		}
		if sid == "" {
			sid = id.Descending(id.Session)
		}
		e = t.addLocked(threadID, sid)
	}
	e.users++
	t.recent.MoveToFront(e.elem)
	t.pruneLocked()
	return e, nil
}

// release ends a request's use of e.
func (t *threads) release(e *threadEntry) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e.users--
	t.pruneLocked()
}

// findLocked looks a thread up in the store: the newest root session
// whose metadata names it, "" when none does. The store answers from its
// index of threads.
func (t *threads) findLocked(ctx context.Context, threadID string) (string, error) {
	roots, err := t.store.ListSessions(ctx, session.ListOptions{RootsOnly: true, Thread: threadID, Limit: 1})
	if err != nil {
		return "", fmt.Errorf("look up thread %s: %w", threadID, err)
	}
	if len(roots) == 0 {
		return "", nil
	}
	return roots[0].ID, nil
}

func (t *threads) addLocked(threadID, sid string) *threadEntry {
	e := &threadEntry{thread: threadID, sid: sid}
	e.elem = t.recent.PushFront(e)
	t.byID[threadID] = e
	return e
}

// pruneLocked forgets the least recently used idle threads beyond max.
func (t *threads) pruneLocked() {
	for el := t.recent.Back(); el != nil && len(t.byID) > t.max; {
		e := el.Value.(*threadEntry)
		el = el.Prev()
		if e.users > 0 {
			continue
		}
		t.recent.Remove(e.elem)
		delete(t.byID, e.thread)
	}
}

// size is the number of threads in memory.
func (t *threads) size() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.byID)
}

// validSessionID reports whether s has the shape of a session id:
// "ses_", 14 lowercase hex digits, 12 base62 characters.
func validSessionID(s string) bool {
	const prefix = id.Session + "_"
	if len(s) != len(prefix)+26 || s[:len(prefix)] != prefix {
		return false
	}
	for i, c := range []byte(s[len(prefix):]) {
		hex := c >= '0' && c <= '9' || c >= 'a' && c <= 'f'
		b62 := c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
		if i < 14 && !hex || i >= 14 && !b62 {
			return false
		}
	}
	return true
}
