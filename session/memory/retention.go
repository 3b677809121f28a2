// Retention: making room for new root sessions by removing the oldest
// finished trees, with the queues that order them.

package memory

import (
	"container/heap"

	"github.com/agentpool/agentpool/session"
)

// makeRoom drops the oldest finished root trees until one more root fits,
// or nothing more can be dropped. Each step is O(1) (O(log parked) from
// the ready heap) besides the size of the dropped tree, and every root
// leaves the queue once, so the work is amortized over creations.
func (st *Store) makeRoom() {
	for st.roots >= st.maxRoots {
		var e *entry
		if len(st.ready) > 0 {
			e = st.ready[0]
		} else {
			for {
				e = st.queue.front()
				if e == nil || !running(e) {
					break
				}
				// Running: not now. It is found again through its entry
				// when UpdateSession finishes it.
				st.queue.pop()
				e.where = parked
			}
			if e == nil {
				return // every root runs
			}
		}
		st.removeTree(e)
	}
}

// untrack takes a root that is being removed out of the retention
// bookkeeping.
func (st *Store) untrack(e *entry) {
	switch e.where {
	case untracked:
		return
	case queued:
		if st.queue.front() == e {
			st.queue.pop()
		} else {
			st.queue.drop(e)
		}
	case ready:
		heap.Remove(&st.ready, e.hidx)
	}
	if e.where != gone {
		e.where = untracked
	}
	st.roots--
}

// removeTree deletes e with its whole subtree from the store.
func (st *Store) removeTree(top *entry) {
	st.untrack(top)
	if p := top.parent; p != nil {
		if top.prev != nil {
			top.prev.next = top.next
		} else {
			p.child = top.next
		}
		if top.next != nil {
			top.next.prev = top.prev
		}
	}
	top.parent, top.prev, top.next = nil, nil, nil
	// Post-order through first children: a leaf is deleted and unlinked,
	// which makes its next sibling the first child of its parent.
	cur := top
	for {
		for cur.child != nil {
			cur = cur.child
		}
		delete(st.sessions, cur.s.ID)
		cur.markGone()
		st.dropCaptures(cur)
		st.live.Delete(cur.s.ID)
		st.unindexThread(cur, threadOf(&cur.s))
		if cur == top {
			break
		}
		p := cur.parent
		p.child = cur.next
		if cur.next != nil {
			cur.next.prev = nil
		}
		cur.parent, cur.next = nil, nil
		cur = p
	}
	if top.where == gone {
		// The queue still points at it until it reaches the front or the
		// queue is compacted: let go of what it holds now.
		top.s = session.Session{}
		top.mu.Lock()
		top.msgs, top.events = nil, eventLog{}
		top.mu.Unlock()
	}
}

// rootQueue holds roots in creation order. Removing a root from its middle
// only marks it gone; gone entries are skipped at the front and squeezed
// out when they are half of the queue, and the consumed front is reclaimed
// when it is half of the slice, so every operation is amortized O(1).
type rootQueue struct {
	items []*entry
	head  int
	stale int // gone entries in items[head:]
}

func (q *rootQueue) push(e *entry) { q.items = append(q.items, e) }

// front returns the first root that is not gone, or nil.
func (q *rootQueue) front() *entry {
	for q.head < len(q.items) {
		if e := q.items[q.head]; e.where != gone {
			return e
		}
		q.stale--
		q.pop()
	}
	return nil
}

func (q *rootQueue) pop() {
	q.items[q.head] = nil
	q.head++
	switch {
	case q.head == len(q.items):
		q.items, q.head = q.items[:0], 0
	case q.head >= 32 && 2*q.head >= len(q.items):
		q.compact()
	}
}

// drop marks e, queued but not at the front, as gone.
func (q *rootQueue) drop(e *entry) {
	e.where = gone
	q.stale++
	if n := len(q.items) - q.head; q.stale >= 32 && 2*q.stale >= n {
		q.compact()
	}
}

// compact moves the live entries to the start of items.
func (q *rootQueue) compact() {
	n := 0
	for _, e := range q.items[q.head:] {
		if e.where != gone {
			q.items[n] = e
			n++
		}
	}
	clear(q.items[n:])
	q.items, q.head, q.stale = q.items[:n], 0, 0
}

// readyHeap holds the parked roots that have finished, oldest first.
type readyHeap []*entry

func (h readyHeap) Len() int           { return len(h) }
func (h readyHeap) Less(i, j int) bool { return h[i].order < h[j].order }
func (h readyHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].hidx, h[j].hidx = i, j
}

func (h *readyHeap) Push(x any) {
	e := x.(*entry)
	e.hidx, e.where = len(*h), ready
	*h = append(*h, e)
}

func (h *readyHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	e.hidx = -1
	return e
}
