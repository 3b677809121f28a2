package queue

import (
	"context"
	"sync"
)

// Group serves several queues to one consumer (the ACP connection's
// writer: one queue per session), each queue in turn: Take returns the
// whole contents of the queue that got items first, then of the next
// one. Every queue keeps its own bound, so a full queue makes only its
// own producers wait (Block). Use NewGroup; a queue joins it through
// Options.Group and stays one of its queues until the group ends.
type Group[T any] struct {
	wake    chan struct{}
	blocked chan struct{} // closed when a push of any queue first waits (Blocked)
	once    sync.Once     // closes blocked

	mu      sync.Mutex
	queues  []*Queue[T]
	turns   []*Queue[T] // queues with items, in turn order (Queue.listed), from head
	head    int
	closing bool  // Close: no more items; a queue that joins is closed
	closed  bool  // Close is done: every queue is closed
	err     error // Abort's error
}

// NewGroup returns a group without queues.
func NewGroup[T any]() *Group[T] {
	return &Group[T]{wake: make(chan struct{}, 1), blocked: make(chan struct{})}
}

// Blocked returns a channel closed when a push of any of the group's
// queues first waited for room (see Queue.Blocked).
func (g *Group[T]) Blocked() <-chan struct{} { return g.blocked }

// noteBlocked closes blocked once. A queue's mu is held; it takes no lock.
func (g *Group[T]) noteBlocked() { g.once.Do(func() { close(g.blocked) }) }

// join adds q (New), ending it at once when the group has ended.
func (g *Group[T]) join(q *Queue[T]) {
	g.mu.Lock()
	closing, err := g.closing, g.err
	if !closing {
		g.queues = append(g.queues, q)
	}
	g.mu.Unlock()
	switch {
	case err != nil:
		q.Abort(err)
	case closing:
		q.Close()
	}
}

// ready gives q, which just got items, its turn. q.mu is held.
func (g *Group[T]) ready(q *Queue[T]) {
	g.mu.Lock()
	if g.head > 0 && len(g.turns) == cap(g.turns) {
		// Reuse the room of the turns taken rather than grow.
		n := copy(g.turns, g.turns[g.head:])
		clear(g.turns[n:])
		g.turns, g.head = g.turns[:n], 0
	}
	g.turns = append(g.turns, q)
	g.mu.Unlock()
	signal(g.wake)
}

func (g *Group[T]) signal() { signal(g.wake) }

// Take waits for a queue with items and takes all of them, in order (see
// Queue.Take); the group has one consumer. It returns ErrClosed once the group was closed and every
// queue drained, the abort's error once it was aborted, or ctx's error.
func (g *Group[T]) Take(ctx context.Context) ([]T, error) {
	for {
		g.mu.Lock()
		if g.err != nil {
			err := g.err
			g.mu.Unlock()
			return nil, err
		}
		if g.head < len(g.turns) {
			q := g.turns[g.head]
			g.turns[g.head] = nil
			if g.head++; g.head == len(g.turns) {
				g.turns, g.head = g.turns[:0], 0
			}
			g.mu.Unlock()
			q.release()
			q.mu.Lock()
			q.listed = false
			if len(q.items) == 0 { // aborted since
				q.mu.Unlock()
				continue
			}
			batch := q.takeLocked()
			q.mu.Unlock()
			return batch, nil
		}
		closed := g.closed
		g.mu.Unlock()
		if closed {
			return nil, ErrClosed
		}
		select {
		case <-g.wake:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// Close closes every queue of the group (and those that join later): what
// is queued is still taken, then Take returns ErrClosed.
func (g *Group[T]) Close() {
	g.mu.Lock()
	g.closing = true
	queues := g.queues
	g.mu.Unlock()
	// Every queue is closed before the group counts as closed, so that an
	// item pushed before is listed by then (Push lists under the queue's
	// lock) and Take does not stop before taking it.
	for _, q := range queues {
		q.Close()
	}
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
	g.signal()
}

// Abort aborts every queue of the group (and those that join later) with
// err (ErrClosed when nil): see Queue.Abort. Take returns err from then
// on.
func (g *Group[T]) Abort(err error) {
	if err == nil {
		err = ErrClosed
	}
	g.mu.Lock()
	if g.err == nil {
		g.err = err
	}
	err = g.err
	g.closing = true
	queues := g.queues
	g.turns, g.head = nil, 0
	g.mu.Unlock()
	for _, q := range queues {
		q.Abort(err)
	}
	g.signal()
}

// Stats returns the sum of the counters of the group's queues (MaxDepth:
// the longest queue seen; Lagged: any queue).
func (g *Group[T]) Stats() Stats {
	g.mu.Lock()
	queues := g.queues
	g.mu.Unlock()
	var s Stats
	for _, q := range queues {
		qs := q.Stats()
		s.Pushed += qs.Pushed
		s.Merged += qs.Merged
		s.Dropped += qs.Dropped
		s.Waited += qs.Waited
		s.MaxDepth = max(s.MaxDepth, qs.MaxDepth)
		s.Lagged = s.Lagged || qs.Lagged
	}
	return s
}
