package record

import (
	"sync/atomic"

	"github.com/agentpool/agentpool/event"
)

// The run's log: how a Recorder hands its events to its consumers (the
// run's watchers and the caller's sink) without calling them under the
// run's lock.
//
// A producer, under the run's lock, appends the event to the store and
// then to the log (a ring of entries numbered from 0), and lets the lock
// go. Each consumer has its own cursor in the log (the number of the next
// entry it gets) and its own delivery token: whoever holds the token
// hands the consumer its entries, in the log's order, one batch at a time
// (the batch copied out under the lock, handed over without it). After
// letting the lock go a producer tries each consumer's token; a consumer
// whose token another goroutine holds is left to it (that goroutine looks
// at the log again after it lets the token go, so no entry is left
// behind). So when one producer is alone in its run (the common case) it
// hands its own event to every consumer before Emit returns, with no
// other goroutine and no hand-over; producers of one run (parallel or
// async children) no longer wait for each other's consumers, and a
// consumer that is slow holds up the goroutine that delivers to it, not
// the other consumers.
//
// Back-pressure: the ring grows to maxLog entries not yet delivered to
// the slowest consumer; a producer that finds it full first delivers
// what it can itself, then waits (before it appends to the store, so
// that the store and the log keep one order) until the slowest consumer
// has taken an entry. Nothing is dropped or merged.
//
// Barrier: Sync waits until every consumer has had every entry appended
// before the call (see Recorder.Sync).

// maxLog bounds the entries a run's log holds for its slowest consumer
// (back-pressure beyond it); minLog is the ring's first size.
const (
	maxLog = 1024
	minLog = 16
	// maxBatch bounds the entries a delivery copies out of the ring at
	// once.
	maxBatch = 64
)

// entry is one event of the log; watch says that it is an event of the
// run (one that names its session), which the watchers get. The caller's
// sink gets every entry.
type entry struct {
	e     event.Event
	watch bool
}

// consumer is one reader of the log: a watcher, or the caller's sink
// (w nil).
type consumer struct {
	w    Watcher
	sink event.Sink
	// run is what gets the run's events for w: w's watcher of this run
	// when w is a RunWatcher, else w; made by the token's holder at the
	// first event w gets (consumer.watcher), nil before.
	run Watcher
	// next is the number of the next entry the consumer gets; written by
	// the token's holder, read by anyone (Sync, the producers' bound).
	next atomic.Uint64
	// busy is the delivery token.
	busy atomic.Bool
	// batch is the token holder's copy of the entries it hands over.
	batch []entry
}

// addConsumer adds c to the run's consumers, from the next entry on; the
// watchers come before the next sink, which is the one a delivery may
// wait on (a caller's bounded queue). Under r.mu.
func (r *Recorder) addConsumer(c *consumer) {
	c.next.Store(r.end.Load())
	cs := make([]*consumer, 0, len(r.cons)+1)
	if c.w != nil {
		cs = append(append(cs, c), r.cons...)
	} else {
		cs = append(append(cs, r.cons...), c)
	}
	r.cons = cs
	r.consPub.Store(&cs)
	if r.ring == nil {
		r.ring = make([]entry, minLog)
	}
}

// low is the number of the oldest entry some consumer has not had. Under
// r.mu.
func (r *Recorder) low() uint64 {
	low := r.end.Load()
	for _, c := range r.cons {
		if n := c.next.Load(); n < low {
			low = n
		}
	}
	return low
}

// reserve makes room in the ring for one entry, growing it up to maxLog,
// then delivering and waiting for the slowest consumer (back-pressure).
// Under r.mu, which it lets go while it delivers and waits: a producer
// calls it before it appends to the store, so that no other event comes
// between its store append and its log append.
func (r *Recorder) reserve() {
	for len(r.cons) > 0 {
		end, low := r.end.Load(), r.low()
		r.forget(low)
		if end-low < uint64(len(r.ring)) {
			return
		}
		if len(r.ring) < maxLog {
			r.grow(low, end)
			return
		}
		r.mu.Unlock()
		r.deliver()
		r.mu.Lock()
		r.waiters.Add(1)
		if r.end.Load()-r.low() >= uint64(len(r.ring)) {
			r.cond.Wait()
		}
		r.waiters.Add(-1)
	}
}

// forget clears the ring's entries before low, which every consumer has
// had: otherwise a ring keeps its last len(ring) events alive until they
// are overwritten (16 and more of every run, with what they wrap), for
// the collector to trace. Under r.mu.
func (r *Recorder) forget(low uint64) {
	mask := uint64(len(r.ring) - 1)
	for ; r.kept < low; r.kept++ {
		r.ring[r.kept&mask] = entry{}
	}
}

// grow doubles the ring, keeping entries low to end. Under r.mu.
func (r *Recorder) grow(low, end uint64) {
	ring := make([]entry, 2*len(r.ring))
	for n := low; n < end; n++ {
		ring[n&uint64(len(ring)-1)] = r.ring[n&uint64(len(r.ring)-1)]
	}
	r.ring = ring
}

// push appends en to the log (reserve made room). Under r.mu.
func (r *Recorder) push(en entry) {
	if len(r.cons) == 0 {
		return
	}
	end := r.end.Load()
	r.ring[end&uint64(len(r.ring)-1)] = en
	r.end.Store(end + 1)
}

// claim takes, for the goroutine that holds r.mu and has just appended,
// the token of every consumer that has entries to get and no deliverer,
// and copies out its first batch under the lock already held (one lock per
// event on the common path). It returns the consumers and, as bits of
// their indexes, those it claimed. Under r.mu.
func (r *Recorder) claim() (cs []*consumer, claimed uint64) {
	cs = r.cons
	end := r.end.Load()
	for i, c := range cs {
		if i == 64 {
			break
		}
		if c.next.Load() < end && c.busy.CompareAndSwap(false, true) {
			c.batch = r.copyBatch(c, end)
			claimed |= 1 << i
		}
	}
	return cs, claimed
}

// deliverClaimed hands the consumers claim claimed their batches and what
// follows, and the others what they have not had if nobody is delivering
// to them.
func (r *Recorder) deliverClaimed(cs []*consumer, claimed uint64) {
	defer func() {
		// A consumer panicked: the tokens claimed and not yet used are let
		// go, or their consumers would get nothing more.
		for i, c := range cs {
			if i < 64 && claimed&(1<<i) != 0 {
				c.busy.Store(false)
			}
		}
	}()
	for i, c := range cs {
		if i < 64 && claimed&(1<<i) != 0 {
			claimed &^= 1 << i // deliverHeld lets it go itself on a panic
			r.deliverHeld(c, c.batch)
			c.busy.Store(false)
		}
		r.drain(c)
	}
}

// deliver hands every consumer whose token is free what it has not had.
func (r *Recorder) deliver() {
	cs := r.consPub.Load()
	if cs == nil {
		return
	}
	for _, c := range *cs {
		r.drain(c)
	}
}

// drain hands c its entries while it holds c's token, and looks again
// after letting it go: an entry appended while it held the token, by a
// producer that found the token taken, is then handed over too.
func (r *Recorder) drain(c *consumer) {
	for c.next.Load() < r.end.Load() {
		if !c.busy.CompareAndSwap(false, true) {
			return // its holder delivers
		}
		r.deliverHeld(c, nil)
		c.busy.Store(false)
	}
}

// deliverHeld hands c, whose token the caller holds, batch (its next
// entries, already copied out), then every entry up to the log's end.
// If the consumer panics, the entry it panicked on counts as handed over
// and the token is let go before the panic goes on to the producer (a
// tool's caller recovers panics): the consumer gets the run's later
// events, and Sync does not wait for it forever.
func (r *Recorder) deliverHeld(c *consumer, batch []entry) {
	defer func() {
		if p := recover(); p != nil {
			c.next.Add(1)
			c.busy.Store(false)
			panic(p)
		}
	}()
	for {
		if len(batch) == 0 {
			if c.next.Load() >= r.end.Load() {
				return
			}
			r.mu.Lock()
			batch = r.copyBatch(c, r.end.Load())
			r.mu.Unlock()
		}
		for i := range batch {
			en := &batch[i]
			switch {
			case c.w != nil:
				if en.watch {
					c.watcher(r.owner).Observe(r.ctx, r.owner, en.e)
				}
			default:
				c.sink.Emit(en.e)
			}
			*en = entry{}
			// Counted one by one: a panic leaves the cursor after the
			// entries that were handed over.
			c.next.Add(1)
		}
		batch = nil
		if r.waiters.Load() > 0 {
			// Producers wait for room, or Sync for this cursor.
			r.mu.Lock()
			r.cond.Broadcast()
			r.mu.Unlock()
		}
	}
}

// watcher returns what gets the run's events for the watcher c (see
// RunWatcher), asking for it at the first event. Only the holder of c's
// token calls it.
func (c *consumer) watcher(owner string) Watcher {
	if c.run == nil {
		c.run = c.w
		if rw, ok := c.w.(RunWatcher); ok {
			if w := rw.WatchRun(owner); w != nil {
				c.run = w
			}
		}
	}
	return c.run
}

// copyBatch copies out of the ring the next entries of c before end, at
// most maxBatch, into c's batch. Under r.mu.
func (r *Recorder) copyBatch(c *consumer, end uint64) []entry {
	from := c.next.Load()
	n := min(end-from, maxBatch)
	if cap(c.batch) < int(n) {
		c.batch = make([]entry, n, maxBatch)
	}
	batch := c.batch[:n]
	mask := uint64(len(r.ring) - 1)
	for i := range batch {
		batch[i] = r.ring[(from+uint64(i))&mask]
	}
	return batch
}

// Sync returns once every consumer of the run (its watchers, the next
// sink) has had every event emitted or relayed before the call. It
// delivers what it can itself and waits for the rest: a consumer whose
// token another goroutine holds gets its entries from it. It must not be
// called from a consumer of the run (it would wait for itself).
//
// Emit may return before its event reached a consumer: when another
// goroutine of the run delivers to that consumer at the time. A producer
// whose next step depends on what a consumer does with its events calls
// Sync first: spawn.Spawn does after a child's spawn_session_start, so
// that a sink that cancels the run on an event sees every event before
// that start before the child runs; the pool does before a run's result
// is returned (and before ContinueRelayed's relayed).
func (r *Recorder) Sync() {
	cs := r.consPub.Load()
	if cs == nil {
		return
	}
	target := r.end.Load()
	for _, c := range *cs {
		if c.next.Load() >= target {
			continue
		}
		r.drain(c)
		r.mu.Lock()
		r.waiters.Add(1)
		for c.next.Load() < target {
			r.cond.Wait()
		}
		r.waiters.Add(-1)
		r.mu.Unlock()
	}
}
