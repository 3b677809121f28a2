// Claims: which sessions a run of this process holds (session.Store.Claim).
// The memory store is private to its process, so every claim is this
// process's, and none outlives it.

package memory

import (
	"context"
	"fmt"
	"time"

	"github.com/agentpool/agentpool/session"
)

// Claim implements session.Store.
func (st *Store) Claim(_ context.Context, sessionID string) error {
	st.mu.RLock()
	defer st.mu.RUnlock()
	if st.closed.Load() {
		return session.ErrClosed
	}
	st.claimsMu.Lock()
	defer st.claimsMu.Unlock()
	if held, since, ok := st.claimedLineage(sessionID); ok {
		owner := session.ThisProcess()
		owner.Since = since
		return &session.RunningError{SessionID: sessionID, Claimed: held, Owner: owner}
	}
	if st.claims == nil {
		st.claims = map[string]time.Time{}
	}
	st.claims[sessionID] = time.Now()
	return nil
}

// Release implements session.Store; memory writes are durable at once.
func (st *Store) Release(ctx context.Context, sessionID string) error {
	st.mu.RLock()
	defer st.mu.RUnlock()
	if st.closed.Load() {
		return closedWrite(ctx, 1)
	}
	st.claimsMu.Lock()
	delete(st.claims, sessionID)
	st.claimsMu.Unlock()
	return nil
}

// claimedLineage finds a claim on id, on one of its ancestors or on one of
// its descendants. st.mu is held (shared will do) and st.claimsMu. Claims are few (one per running root
// run): each claimed session is walked up to see whether id is above it,
// rather than walking id's whole subtree.
func (st *Store) claimedLineage(id string) (string, time.Time, bool) {
	if since, ok := st.claims[id]; ok {
		return id, since, true
	}
	e, ok := st.sessions[id]
	if !ok || len(st.claims) == 0 {
		return "", time.Time{}, false
	}
	for p := e.parent; p != nil; p = p.parent {
		if since, ok := st.claims[p.s.ID]; ok {
			return p.s.ID, since, true
		}
	}
	for cid, since := range st.claims {
		c, ok := st.sessions[cid]
		if !ok {
			continue
		}
		for p := c.parent; p != nil; p = p.parent {
			if p == e {
				return cid, since, true
			}
		}
	}
	return "", time.Time{}, false
}

// closedWrite is the answer to a write of n items on a closed store: the
// write is lost (session.ReportWrite), with ErrClosed. Memory loses no
// other write.
func closedWrite(ctx context.Context, n int) error {
	session.WritesOf(ctx).Lost(n, errClosedWrite)
	return session.ErrClosed
}

// errClosedWrite is how a run's account names a write lost to a closed
// store.
var errClosedWrite = fmt.Errorf("memory: %w", session.ErrClosed)
