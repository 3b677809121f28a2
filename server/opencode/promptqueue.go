package opencode

import (
	"context"
	"fmt"
	"net/http"
	"slices"

	"github.com/agentpool/agentpool/server/opencode/internal/wire"
)

// sessionRuns serializes the prompts of one session: one run at a time,
// the others wait in the order they came (as OpenCode queues them). gen
// is the context of the current and queued prompts; abort cancels it and
// starts a new one. Guarded by s.mu.
//
// The queues are bounded, because a waiting prompt holds its text (up to
// a body's 8 MiB) in memory: at most MaxQueuedPrompts wait per session,
// and at most MaxQueuedBytes of text in all sessions together (s.queued).
type sessionRuns struct {
	running bool
	waiting []*waiter
	gen     context.Context
	cancel  context.CancelCauseFunc
}

// waiter is a prompt waiting for its session's turn.
type waiter struct {
	turn    chan struct{} // closed when the turn is its
	size    int           // bytes of its text, counted in s.queued
	dropped bool          // an abort took it out of the queue
}

// queueFull is why a prompt may not wait in a queue (answered 429).
type queueFull struct{ msg string }

func (e *queueFull) Error() string { return e.msg }

// admitLocked checks that a prompt of size bytes may wait in st, the
// queue of session sid. s.mu is held.
func (s *Server) admitLocked(st *sessionRuns, sid string, size int) *queueFull {
	if n := len(st.waiting); n >= s.opts.MaxQueuedPrompts {
		return &queueFull{fmt.Sprintf("session %s already has %d prompts waiting, the most allowed: wait for them to run, or abort the session", sid, n)}
	}
	if s.queued+size > s.opts.MaxQueuedBytes {
		return &queueFull{fmt.Sprintf("the prompts waiting on this server already hold %d bytes; with this one (%d bytes) they would pass the bound of %d bytes: wait for them to run, or abort a session",
			s.queued, size, s.opts.MaxQueuedBytes)}
	}
	return nil
}

// waitLocked queues a prompt of size bytes in st. s.mu is held.
func (s *Server) waitLocked(st *sessionRuns, size int) *waiter {
	w := &waiter{turn: make(chan struct{}), size: size}
	st.waiting = append(st.waiting, w)
	s.queued += size
	return w
}

// releaseLocked passes st's turn to its next waiting prompt. s.mu is held.
func (s *Server) releaseLocked(st *sessionRuns) {
	if len(st.waiting) == 0 {
		st.running = false
		return
	}
	next := st.waiting[0]
	st.waiting = st.waiting[1:]
	s.queued -= next.size
	close(next.turn)
}

// leaveLocked takes w, whose prompt was cancelled while it waited, out of
// st. s.mu is held.
func (s *Server) leaveLocked(st *sessionRuns, w *waiter) {
	i := slices.Index(st.waiting, w)
	switch {
	case w.dropped:
	case i >= 0:
		st.waiting = slices.Delete(st.waiting, i, i+1)
		s.queued -= w.size
	default:
		s.releaseLocked(st) // the turn came at the same time: pass it on
	}
}

// dropWaitingLocked empties st's queue (an abort): its prompts end
// aborted, and a new prompt finds room at once. s.mu is held.
func (s *Server) dropWaitingLocked(st *sessionRuns) {
	for _, w := range st.waiting {
		w.dropped = true
		s.queued -= w.size
	}
	st.waiting = nil
}

// writeQueueFull answers a prompt refused by admitLocked.
func writeQueueFull(w http.ResponseWriter, err *queueFull) {
	writeJSON(w, http.StatusTooManyRequests, wire.QueueFullError{Name: "QueueFullError", Data: wire.ErrorData{Message: err.msg}})
}
