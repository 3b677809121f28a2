package agui

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/agentpool/agentpool/id"
	"github.com/agentpool/agentpool/session"
)

// MetadataThreadKey is the session metadata key that records the AG-UI
// threadId of a root session created for a thread whose id is not a
// session id.
const MetadataThreadKey = "agui_thread_id"

// threads maps AG-UI thread ids to root session ids.
//
// A threadId that is a session id (ses_ + 26 characters, as the store's
// own ids) is the root session id itself. Any other threadId (the clients
// mint UUIDs) gets a fresh session id; the pair lives in memory and in the
// session's metadata under MetadataThreadKey, so it survives a restart
// with a persistent store: the first lookup of such a thread after start
// indexes the stored root sessions once.
type threads struct {
	store  session.Store
	mu     sync.Mutex
	loaded bool
	byID   map[string]string // threadId -> root session id
}

func newThreads(st session.Store) *threads {
	return &threads{store: st, byID: map[string]string{}}
}

// errChildThread is returned for a threadId that names a child session.
var errChildThread = errors.New("threadId names a child session; threads are root sessions")

// resolve returns the root session of a thread and whether it exists yet.
// mapped reports that the session id is not the threadId itself.
func (t *threads) resolve(ctx context.Context, threadID string) (sid string, exists, mapped bool, err error) {
	if validSessionID(threadID) {
		sid = threadID
	} else {
		mapped = true
		sid, err = t.lookup(ctx, threadID)
		if err != nil {
			return "", false, mapped, err
		}
	}
	s, err := t.store.GetSession(ctx, sid)
	switch {
	case errors.Is(err, session.ErrNotFound):
		return sid, false, mapped, nil
	case err != nil:
		return "", false, mapped, fmt.Errorf("look up thread %s: %w", threadID, err)
	case s.ParentID != "":
		return "", false, mapped, errChildThread
	}
	return sid, true, mapped, nil
}

// lookup finds or allocates the session id of a thread whose id is not a
// session id. The allocation is reserved at once, so concurrent first runs
// of one thread agree on the id (and the second one finds it busy).
func (t *threads) lookup(ctx context.Context, threadID string) (string, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.loaded {
		roots, err := t.store.ListSessions(ctx, session.ListOptions{RootsOnly: true})
		if err != nil {
			return "", fmt.Errorf("index threads: %w", err)
		}
		// Newest first: keep the newest session of a thread id if several.
		for i := len(roots) - 1; i >= 0; i-- {
			if th, ok := roots[i].Metadata[MetadataThreadKey].(string); ok && th != "" {
				t.byID[th] = roots[i].ID
			}
		}
		t.loaded = true
	}
	if sid, ok := t.byID[threadID]; ok {
		return sid, nil
	}
	sid := id.Descending(id.Session)
	t.byID[threadID] = sid
	return sid, nil
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
