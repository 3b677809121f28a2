package agui

import (
	"context"
	"sync"
)

const (
	// DefaultQueueSize is the number of events that may wait between a run
	// and a slow client.
	DefaultQueueSize = 1024
	// maxMergedDelta bounds the text one merged delta may carry.
	maxMergedDelta = 64 << 10
	// mergeScan bounds how far back a delta looks for one to join.
	mergeScan = 64
)

// queue is the bounded buffer between a run (one producer: the pool's
// recorder serializes the sink) and the HTTP writer (one consumer).
//
// When it is full, a delta joins an earlier queued delta of the same
// message or tool call if no other event of the same session sits between
// them; a droppable event is dropped; any other event blocks the producer
// until the consumer takes the queue's contents (or goes away).
type queue struct {
	mu      sync.Mutex
	items   []item
	spare   []item
	size    int
	closed  bool // the producer is done
	gone    bool // the consumer is gone: everything is discarded
	wake    chan struct{}
	space   chan struct{}
	merged  int
	dropped int
}

func newQueue(size int) *queue {
	if size <= 0 {
		size = DefaultQueueSize
	}
	return &queue{size: size, wake: make(chan struct{}, 1), space: make(chan struct{}, 1)}
}

func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// push adds it, waiting for room when it may be neither merged nor
// dropped. It never blocks once the consumer is gone.
func (q *queue) push(it item) {
	for {
		q.mu.Lock()
		switch {
		case q.gone:
			q.mu.Unlock()
			return
		case len(q.items) < q.size:
			q.items = append(q.items, it)
			q.mu.Unlock()
			signal(q.wake)
			return
		case it.class == classDelta && q.merge(it):
			q.merged++
			q.mu.Unlock()
			return
		case it.class == classDroppable:
			q.dropped++
			q.mu.Unlock()
			return
		}
		q.mu.Unlock()
		<-q.space
	}
}

// merge appends it's delta to the latest queued delta of the same stream,
// looking back past events of other sessions only. q.mu is held.
func (q *queue) merge(it item) bool {
	for i, n := len(q.items)-1, 0; i >= 0 && n < mergeScan; i, n = i-1, n+1 {
		prev := &q.items[i]
		if prev.owner != it.owner {
			continue
		}
		p, e := prev.ev, it.ev
		if prev.class != classDelta || p.Type != e.Type || p.MessageID != e.MessageID || p.ToolCallID != e.ToolCallID ||
			p.SubagentRunID != e.SubagentRunID || len(p.Delta)+len(e.Delta) > maxMergedDelta {
			return false
		}
		p.Delta += e.Delta
		return true
	}
	return false
}

// close marks the end of the producer's events.
func (q *queue) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	signal(q.wake)
}

// abandon discards everything queued and lets the producer go on without
// waiting: the consumer will not read any more.
func (q *queue) abandon() {
	q.mu.Lock()
	q.gone = true
	q.items = nil
	q.mu.Unlock()
	signal(q.space)
}

// take waits for events and returns all of them, in order. It returns
// false when the producer is done and everything was taken, or when ctx
// ends. The returned slice is valid until the next call.
func (q *queue) take(ctx context.Context) ([]item, bool) {
	for {
		q.mu.Lock()
		if len(q.items) > 0 {
			out := q.items
			q.items, q.spare = q.spare[:0], out
			q.mu.Unlock()
			signal(q.space)
			return out, true
		}
		closed := q.closed
		q.mu.Unlock()
		if closed {
			return nil, false
		}
		select {
		case <-q.wake:
		case <-ctx.Done():
			return nil, false
		}
	}
}

// stats reports how many deltas were merged and events dropped.
func (q *queue) stats() (merged, dropped int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.merged, q.dropped
}
