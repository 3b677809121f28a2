// Package queue is the bounded delivery queue between a producer (a run,
// the server's event publisher) and a consumer that may be slow (a
// client's connection). The three protocol servers use it: one Queue per
// ACP session (a Group of them drained by the connection's writer), per
// AG-UI run and per OpenCode event stream.
//
// A Queue holds at most Capacity items for its consumer, in order. Push
// never runs consumer code: it appends under the queue's own short lock
// and wakes the consumer with a non-blocking signal, so that no producer
// waits on a consumer except, by design, on a full Block queue. When the
// queue is full, an item is handled in this order:
//
//   - Merge may join it into a queued item (a text delta into the latest
//     queued delta of the same stream), looking back at most Scan items,
//     or, with Stream, at the latest queued item of the item's stream
//     only, wherever it is (a queue that many streams share: the one an
//     item could join may lie thousands of items back);
//   - Drop may let it go (a progress notice that a later one supersedes);
//   - otherwise (a lifecycle item) it is never dropped: with Block, Push
//     waits until the consumer takes the queue's contents (only that
//     queue's producers wait); with Disconnect, it is queued, up to
//     Factor×Capacity items, past which the consumer is cut off (its Take
//     fails with ErrLagging) instead of holding up the producer or growing
//     without bound.
//
// With MergeTail, Merge is also asked about the last queued item on every
// push below capacity, so that a consumer a few items behind (a writer
// that batches its writes) takes the deltas joined.
//
// Merge and Drop are the item type's policy: they run under the queue's
// lock and must neither block nor call the queue.
//
// Take returns everything queued at once (one batch per wake-up, valid
// until the next Take), so a consumer writes a burst in one write.
package queue

import (
	"context"
	"errors"
	"sync"
	"time"
)

// Defaults of Options.
const (
	// DefaultCapacity is the number of items that may wait for a consumer.
	DefaultCapacity = 1024
	// DefaultScan bounds how far back Merge looks for an item to join.
	DefaultScan = 64
	// DefaultFactor × Capacity is how far a Disconnect queue's consumer may
	// fall behind before it is cut off.
	DefaultFactor = 16
	// Once a burst is over (calmBatches batches in a row of at most keep
	// items), a queue keeps room for at most 2×keep items: a queue that
	// once filled up (a burst, a slow client) does not hold on to its
	// room, but reuses it while big batches come.
	keep        = 64
	calmBatches = 4
)

var (
	// ErrClosed is returned by Push once the queue was closed, and by Take
	// once a closed queue is drained.
	ErrClosed = errors.New("queue: closed")
	// ErrLagging is returned by Push and Take of a Disconnect queue whose
	// consumer fell Factor×Capacity items behind.
	ErrLagging = errors.New("queue: consumer too far behind")
	// errGrouped is returned by Take of a queue of a Group.
	errGrouped = errors.New("queue: the queue of a group is taken through the group")
)

// Verdict is what Merge made of a new item and one queued item.
type Verdict uint8

const (
	// Stop: next may neither join prev nor move past it (prev is of the
	// same stream but cannot take next, or is a barrier): next is queued
	// as it is.
	Stop Verdict = iota
	// Skip: prev is of another stream; next may move before it, so Merge
	// is asked about the item before prev.
	Skip
	// Merged: next was merged into *prev.
	Merged
)

// Overflow is what a full queue does with an item that neither merges nor
// may be dropped.
type Overflow uint8

const (
	// Block: Push waits until the consumer takes the queue's contents (or
	// the queue is closed or aborted).
	Block Overflow = iota
	// Disconnect: Push never waits; the item is queued, and when
	// Factor×Capacity items are queued the queue is aborted with
	// ErrLagging (its items are discarded, its consumer is cut off).
	Disconnect
)

// Options configure a Queue. The zero value is a blocking queue of
// DefaultCapacity items that never merges nor drops.
type Options[T any] struct {
	// Capacity is the number of items queued before Merge, Drop and
	// Overflow apply (DefaultCapacity when 0 or less).
	Capacity int
	// Merge, when set, is asked, on a full queue, whether next may join
	// the queued item prev, from the latest one back (at most Scan of
	// them): see Verdict. It may modify *prev (or replace it: a queued
	// item another queue shares is replaced, not modified).
	Merge func(prev *T, next T) Verdict
	// Scan bounds how many queued items Merge is asked about
	// (DefaultScan when 0 or less).
	Scan int
	// MergeTail, with Merge, also asks Merge about the last queued item
	// when the queue is not full (Skip counts as Stop): a consumer that
	// is a few items behind its producer (a writer that batches its
	// writes) then takes fewer, larger items, not only once the queue
	// is full.
	MergeTail bool
	// Stream, when set with Merge, names the stream of an item: Merge is
	// then asked about one queued item only, the latest of next's stream
	// (Skip counts as Stop), found through an index the queue builds when
	// it first fills up and keeps until the consumer takes the items.
	// Scan does not apply.
	Stream func(T) string
	// Drop, when set, reports whether next may be dropped from a full
	// queue when it did not merge. Lifecycle items must not be droppable.
	Drop func(next T) bool
	// Overflow is what a full queue does with the other items.
	Overflow Overflow
	// Factor × Capacity is the most a Disconnect queue holds
	// (DefaultFactor when 0 or less).
	Factor int
	// Group, when set, makes the queue one of the group's: its items are
	// taken through Group.Take.
	Group *Group[T]
}

// Stats are a queue's counters.
type Stats struct {
	Pushed   int  // items Push accepted: queued, merged or dropped
	Merged   int  // items merged into a queued one
	Dropped  int  // items dropped (Drop)
	Waited   int  // pushes that waited for room (Block)
	MaxDepth int  // the most items queued at once
	Lagged   bool // the consumer was cut off (Disconnect)
}

// Queue is a bounded FIFO of items of type T between producers and one
// consumer. Use New.
type Queue[T any] struct {
	capacity, hard, scan int
	merge                func(*T, T) Verdict
	mergeTail            bool
	stream               func(T) string
	drop                 func(T) bool
	overflow             Overflow
	group                *Group[T]

	mu      sync.Mutex
	items   []T
	spare   []T // the previous batch: the next one's room; only the consumer touches it
	closed  bool
	aborted bool
	err     error         // why Push fails: set by Close or Abort
	space   chan struct{} // closed when the consumer takes the items; nil when no push waits
	blocked chan struct{} // closed when a push first waits for room (Blocked)
	wake    chan struct{} // a push or the end, for Take (not for a group's queue)
	// latest indexes the latest queued item of each stream (Stream),
	// while indexed: from the first merge of a full queue to the next
	// take.
	latest  map[string]int
	indexed bool
	listed  bool // in group.turns
	calm    int  // batches of at most keep items in a row
	stats   Stats
}

// New returns an empty queue.
func New[T any](o Options[T]) *Queue[T] {
	if o.Capacity <= 0 {
		o.Capacity = DefaultCapacity
	}
	if o.Scan <= 0 {
		o.Scan = DefaultScan
	}
	if o.Factor <= 0 {
		o.Factor = DefaultFactor
	}
	q := &Queue[T]{
		capacity: o.Capacity, hard: o.Capacity * o.Factor, scan: o.Scan,
		merge: o.Merge, mergeTail: o.MergeTail && o.Merge != nil, stream: o.Stream, drop: o.Drop, overflow: o.Overflow, group: o.Group,
		blocked: make(chan struct{}),
	}
	if q.group == nil {
		q.wake = make(chan struct{}, 1)
	} else {
		q.group.join(q)
	}
	return q
}

// Push queues v, merging, dropping or waiting (Block) when the queue is
// full: see the package documentation. It returns the queue's error once
// it was closed or aborted (v is then discarded), and ErrLagging when v
// cut a Disconnect queue's consumer off.
func (q *Queue[T]) Push(v T) error {
	waited := false
	for {
		q.mu.Lock()
		if q.err != nil {
			err := q.err
			q.mu.Unlock()
			return err
		}
		n := len(q.items)
		switch {
		case n > 0 && n < q.capacity && q.mergeTail && q.merge(&q.items[n-1], v) == Merged:
			// No signal: the push of the item v joined woke the consumer
			// (the queue is empty once it has taken them).
			q.stats.Pushed++
			q.stats.Merged++
			q.mu.Unlock()
			return nil
		case n < q.capacity:
		case q.merge != nil && q.mergeLocked(v):
			q.stats.Pushed++
			q.stats.Merged++
			q.mu.Unlock()
			return nil
		case q.drop != nil && q.drop(v):
			q.stats.Pushed++
			q.stats.Dropped++
			q.mu.Unlock()
			return nil
		case q.overflow == Disconnect && n >= q.hard:
			q.stats.Lagged = true
			q.abortLocked(ErrLagging)
			q.mu.Unlock()
			q.signal()
			return ErrLagging
		case q.overflow == Block:
			if q.space == nil {
				q.space = make(chan struct{})
			}
			space := q.space
			if !waited {
				waited = true
				if q.stats.Waited++; q.stats.Waited == 1 {
					close(q.blocked)
					if q.group != nil {
						q.group.noteBlocked()
					}
				}
			}
			q.mu.Unlock()
			<-space
			continue
		}
		q.items = append(q.items, v)
		if q.indexed {
			q.latest[q.stream(v)] = len(q.items) - 1
		}
		q.stats.Pushed++
		q.stats.MaxDepth = max(q.stats.MaxDepth, len(q.items))
		if q.group != nil {
			if !q.listed {
				// Listed under q.mu, so that a group that sees no queue
				// ready after its queues were closed has missed none.
				q.listed = true
				q.group.ready(q)
			}
			q.mu.Unlock()
			return nil
		}
		q.mu.Unlock()
		q.signal()
		return nil
	}
}

// Blocked returns a channel closed when a push first waited for room
// (Block): the queue was full of items that neither merged nor dropped.
// It is the notice that a producer is held by its consumer, for those
// (tests, metrics) that wait for that state rather than poll Stats.
func (q *Queue[T]) Blocked() <-chan struct{} { return q.blocked }

// mergeLocked asks Merge whether v joins a queued item: the latest of its
// stream (Stream, through the index, built here the first time), else the
// scan of Merge. q.mu is held.
func (q *Queue[T]) mergeLocked(v T) bool {
	if q.stream == nil {
		return Merge(q.items, v, q.merge, q.scan)
	}
	if !q.indexed {
		if q.latest == nil {
			q.latest = make(map[string]int)
		}
		for i := range q.items {
			q.latest[q.stream(q.items[i])] = i
		}
		q.indexed = true
	}
	i, ok := q.latest[q.stream(v)]
	return ok && q.merge(&q.items[i], v) == Merged
}

// Merge is the merge scan of a full queue: it asks merge about next and the
// items of queued from the latest back, at most scan of them, until one
// says Merged (true) or Stop (false).
func Merge[T any](queued []T, next T, merge func(prev *T, next T) Verdict, scan int) bool {
	for i, n := len(queued)-1, 0; i >= 0 && n < scan; i, n = i-1, n+1 {
		switch merge(&queued[i], next) {
		case Merged:
			return true
		case Stop:
			return false
		}
	}
	return false
}

// Take waits for items and takes all of them, in order. The queue has one
// consumer: Take is not called concurrently. The batch is valid until the
// next Take, which clears it. Take returns ErrClosed when the queue was
// closed and everything taken, the abort's error once it was aborted (at
// once: what was queued is discarded), or ctx's error.
func (q *Queue[T]) Take(ctx context.Context) ([]T, error) {
	return q.TakeOr(ctx, nil)
}

// TakeOr is Take that also returns, with nil and no error, when idle
// delivers first (a heartbeat ticker; nil: never).
func (q *Queue[T]) TakeOr(ctx context.Context, idle <-chan time.Time) ([]T, error) {
	if q.group != nil {
		return nil, errGrouped
	}
	q.release()
	for {
		q.mu.Lock()
		if q.aborted {
			err := q.err
			q.mu.Unlock()
			return nil, err
		}
		if len(q.items) > 0 {
			batch := q.takeLocked()
			q.mu.Unlock()
			return batch, nil
		}
		if q.closed {
			q.mu.Unlock()
			return nil, ErrClosed
		}
		q.mu.Unlock()
		select {
		case <-q.wake:
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-idle:
			return nil, nil
		}
	}
}

// release clears the previous batch, which the consumer is done with, so
// that the queue keeps no references to what was taken. Only the consumer
// touches q.spare: it runs before Take locks, not holding up pushes.
func (q *Queue[T]) release() { clear(q.spare) }

// takeLocked takes the queued items and lets waiting pushes in. q.mu is
// held, and release was called.
func (q *Queue[T]) takeLocked() []T {
	batch := q.items
	room := q.spare // the previous batch, cleared (release)
	if len(batch) > keep {
		q.calm = 0
	} else if q.calm++; q.calm >= calmBatches && cap(room) > 2*keep {
		// The burst is over: room for a big batch is not kept.
		room = nil
	}
	q.items, q.spare = room[:0], batch
	q.unindex()
	q.wakePushes()
	return batch
}

// unindex drops the stream index (the items it indexed are gone). q.mu is
// held.
func (q *Queue[T]) unindex() {
	if q.indexed {
		clear(q.latest)
		q.indexed = false
	}
}

// wakePushes releases the pushes waiting for room. q.mu is held.
func (q *Queue[T]) wakePushes() {
	if q.space != nil {
		close(q.space)
		q.space = nil
	}
}

// Close ends the producer's side: later (and waiting) pushes fail with
// ErrClosed; what is queued is still taken, then Take returns ErrClosed.
func (q *Queue[T]) Close() {
	q.mu.Lock()
	if q.err == nil {
		q.closed, q.err = true, ErrClosed
	}
	q.wakePushes()
	q.mu.Unlock()
	q.signal()
}

// Abort ends the queue for both sides: what is queued is discarded,
// pushes (waiting or later) and Take fail with err (ErrClosed when nil).
// The first abort's error stays.
func (q *Queue[T]) Abort(err error) {
	if err == nil {
		err = ErrClosed
	}
	q.mu.Lock()
	q.abortLocked(err)
	q.mu.Unlock()
	q.signal()
}

func (q *Queue[T]) abortLocked(err error) {
	if !q.aborted {
		q.aborted, q.closed, q.err = true, true, err
	}
	q.items = nil // (q.spare is the consumer's)
	q.unindex()
	q.wakePushes()
}

// signal wakes the consumer. Not under q.mu.
func (q *Queue[T]) signal() {
	if q.wake != nil {
		signal(q.wake)
		return
	}
	q.group.signal()
}

// Len returns the number of items queued.
func (q *Queue[T]) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.items)
}

// Stats returns the queue's counters.
func (q *Queue[T]) Stats() Stats {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.stats
}

func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}
