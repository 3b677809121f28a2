package opencode

import (
	"context"
	"slices"
)

// sessionRuns serializes the prompts of one session: one run at a time,
// the others wait in the order they came (as OpenCode queues them). gen
// is the context of the current and queued prompts; abort cancels it and
// starts a new one. Guarded by its session's lock (sessState.mu). How many prompts may wait, and how
// large, is the prompt budget's business (promptbudget.go): a prompt
// holds its share from before its body is read to the end of its run.
type sessionRuns struct {
	running bool
	waiting []*waiter
	gen     context.Context
	cancel  context.CancelCauseFunc
}

// waiter is a prompt waiting for its session's turn.
type waiter struct {
	turn    chan struct{} // closed when the turn is its
	hold    *promptHold   // its share of the prompt budget
	dropped bool          // an abort took it out of the queue
}

// waitLocked queues a prompt in st.
func (st *sessionRuns) waitLocked(hold *promptHold) *waiter {
	w := &waiter{turn: make(chan struct{}), hold: hold}
	st.waiting = append(st.waiting, w)
	return w
}

// releaseLocked passes st's turn to its next waiting prompt.
func (st *sessionRuns) releaseLocked() {
	if len(st.waiting) == 0 {
		st.running = false
		return
	}
	next := st.waiting[0]
	st.waiting = st.waiting[1:]
	close(next.turn)
}

// leaveLocked takes w, whose prompt was cancelled while it waited, out of
// st; its hold is released.
func (st *sessionRuns) leaveLocked(w *waiter, budget *promptBudget) {
	i := slices.Index(st.waiting, w)
	switch {
	case w.dropped:
	case i >= 0:
		st.waiting = slices.Delete(st.waiting, i, i+1)
	default:
		st.releaseLocked() // the turn came at the same time: pass it on
	}
	budget.release(w.hold)
}

// dropWaitingLocked empties st's queue (an abort): its prompts end
// aborted, and their share of the budget is free at once, so that a new
// prompt finds room.
func (st *sessionRuns) dropWaitingLocked(budget *promptBudget) {
	for _, w := range st.waiting {
		w.dropped = true
		budget.release(w.hold)
	}
	st.waiting = nil
}
