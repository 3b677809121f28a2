package agui

import (
	"sync"

	"github.com/agentpool/agentpool/approval"
	"github.com/agentpool/agentpool/server/agui/internal/wire"
)

// runApprovals is one streaming run's share of the approval broker's
// notices. The broker's delivery (approvalsHub.onNotice) only appends to
// the inbox, so it never waits for this run's client; the run's mapper
// takes the inbox under its own lock (mapper.drainApprovals), from the
// run's events and from the run's forwarder goroutine while the run waits
// for an answer.
type runApprovals struct {
	threadID, runID string
	// pending reports whether the broker still waits for an answer to a
	// request (approval.Broker.Lookup).
	pending func(requestID string) bool

	mu     sync.Mutex
	cond   sync.Cond // signalled on a new notice and on close; L is &mu
	inbox  []approval.Notice
	closed bool // no notice comes any more: the run ended or the hub detached
	// shown holds the approvals this run's stream has announced and not
	// yet settled, for GET /approvals.
	shown map[string]wire.Approval
}

func newRunApprovals(threadID, runID string, pending func(string) bool) *runApprovals {
	r := &runApprovals{threadID: threadID, runID: runID, pending: pending, shown: map[string]wire.Approval{}}
	r.cond.L = &r.mu
	return r
}

// push queues a notice for the run (the broker's delivery calls it; it
// never blocks for long).
func (r *runApprovals) push(n approval.Notice) {
	r.mu.Lock()
	if !r.closed {
		r.inbox = append(r.inbox, n)
		r.cond.Broadcast()
	}
	r.mu.Unlock()
}

// take returns the queued notices, oldest first, and empties the inbox.
func (r *runApprovals) take() []approval.Notice {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.inbox
	r.inbox = nil
	return out
}

// wait blocks until a notice is queued (true) or the inbox is closed and
// empty (false).
func (r *runApprovals) wait() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for len(r.inbox) == 0 && !r.closed {
		r.cond.Wait()
	}
	return len(r.inbox) > 0
}

// close ends the inbox: later notices are dropped and waiters return.
func (r *runApprovals) close() {
	r.mu.Lock()
	r.closed = true
	r.cond.Broadcast()
	r.mu.Unlock()
}

func (r *runApprovals) show(a wire.Approval) {
	r.mu.Lock()
	r.shown[a.ID] = a
	r.mu.Unlock()
}

func (r *runApprovals) settle(requestID string) {
	r.mu.Lock()
	delete(r.shown, requestID)
	r.mu.Unlock()
}

// shownApprovals adds the approvals this run shows to into (by id), with
// the run's thread and run ids.
func (r *runApprovals) shownApprovals(into map[string]wire.Approval) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for id, a := range r.shown {
		a.ThreadID, a.RunID = r.threadID, r.runID
		into[id] = a
	}
}
