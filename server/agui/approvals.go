package agui

import (
	"context"
	"sync"

	"github.com/agentpool/agentpool/approval"
	"github.com/agentpool/agentpool/server/agui/internal/wire"
	"github.com/agentpool/agentpool/session"
)

// frontEnd is how the broker names this server's answers.
const frontEnd = "agui"

// approvalsHub is the AG-UI front end of the approval broker
// (Options.Approvals): attached for the server's life, it hands every
// notice to each streaming run (the run keeps those of its own sessions),
// lists the pending requests (GET /approvals) and takes the answers (POST
// /approvals/{id}).
type approvalsHub struct {
	broker *approval.Broker
	store  session.Store
	detach func()

	mu     sync.Mutex
	runs   map[*runApprovals]struct{}
	closed bool
}

func newApprovalsHub(b *approval.Broker, store session.Store) *approvalsHub {
	h := &approvalsHub{broker: b, store: store, runs: map[*runApprovals]struct{}{}}
	h.detach = b.Attach(frontEnd, h.onNotice)
	return h
}

// onNotice runs on the broker's delivery, never under its lock: it only
// queues the notice for each streaming run, so it returns at once
// whatever the runs' clients do.
func (h *approvalsHub) onNotice(n approval.Notice) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for r := range h.runs {
		r.push(n)
	}
}

// open registers a run that is about to stream: from now on it gets every
// notice. The caller removes it with close once the run has ended.
func (h *approvalsHub) open(threadID, runID string) *runApprovals {
	r := newRunApprovals(threadID, runID, func(id string) bool {
		_, ok := h.broker.Lookup(id)
		return ok
	})
	h.mu.Lock()
	if h.closed {
		r.close()
	} else {
		h.runs[r] = struct{}{}
	}
	h.mu.Unlock()
	return r
}

// close unregisters r and ends its inbox.
func (h *approvalsHub) close(r *runApprovals) {
	h.mu.Lock()
	delete(h.runs, r)
	h.mu.Unlock()
	r.close()
}

// shutdown detaches from the broker and ends every run's inbox, so that
// nothing waits for a notice any more.
func (h *approvalsHub) shutdown() {
	h.detach()
	h.mu.Lock()
	h.closed = true
	for r := range h.runs {
		r.close()
	}
	h.mu.Unlock()
}

// list returns the pending requests, oldest first, as the streams showed
// them (with the thread and run), or, for one no stream showed, from the
// broker and the store; threadID, when set, keeps that thread's.
func (h *approvalsHub) list(ctx context.Context, threadID string) []wire.Approval {
	shown := map[string]wire.Approval{}
	h.mu.Lock()
	for r := range h.runs {
		r.shownApprovals(shown)
	}
	h.mu.Unlock()
	out := []wire.Approval{}
	for _, req := range h.broker.Pending() {
		a, ok := shown[req.ID]
		if !ok {
			a = approvalValue(req, h.parentOf(ctx, req.SessionID))
		}
		if threadID == "" || a.ThreadID == threadID {
			out = append(out, a)
		}
	}
	return out
}

// parentOf is the parent of session sid ("" for a root, or when the store
// does not have it).
func (h *approvalsHub) parentOf(ctx context.Context, sid string) string {
	s, err := h.store.GetSession(ctx, sid)
	if err != nil {
		return ""
	}
	return s.ParentID
}
