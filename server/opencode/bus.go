package opencode

import (
	"slices"
	"sync"
	"sync/atomic"

	"github.com/agentpool/agentpool/id"
	"github.com/agentpool/agentpool/internal/jsonstr"
	"github.com/agentpool/agentpool/internal/queue"
)

// Defaults of the event queues.
const (
	// DefaultQueueSize is the number of events that may wait for one slow
	// SSE client before deltas start to be coalesced.
	DefaultQueueSize = 1024
	// hardFactor × QueueSize is the most a subscriber may fall behind: past
	// it the subscriber is disconnected (its stream ends) instead of
	// stalling runs or growing without bound.
	hardFactor = 16
	// maxMergedDelta bounds the text one coalesced delta may carry.
	maxMergedDelta = 64 << 10
)

// busEvent is one event of the bus. It is shared, read-only, by every
// subscriber queue; a coalesced delta is a new value.
type busEvent struct {
	id      string
	typ     string
	dir     string // directory of the session the event belongs to
	session string // "" for server events
	props   []byte // encoded properties (nil for a delta)
	delta   *deltaProps

	// reached, when not nil, makes the event a barrier: nothing is
	// written for it; the stream closes reached once everything queued
	// before it has been written and flushed to the client.
	reached chan struct{}
}

// appendFrame appends the SSE frame of e: `data: {...}\n\n`; global frames
// are {directory, payload}.
func (e *busEvent) appendFrame(b []byte, global bool) []byte {
	if e.reached != nil {
		return b // a barrier: nothing to write
	}
	b = append(b, "data: "...)
	if global {
		b = append(b, `{"directory":`...)
		b = jsonstr.Append(b, e.dir)
		b = append(b, `,"payload":`...)
	}
	b = append(b, `{"id":`...)
	b = jsonstr.Append(b, e.id)
	b = append(b, `,"type":`...)
	b = jsonstr.Append(b, e.typ)
	b = append(b, `,"properties":`...)
	if e.delta != nil {
		b = e.delta.appendJSON(b)
	} else {
		b = append(b, e.props...)
	}
	b = append(b, '}')
	if global {
		b = append(b, '}')
	}
	return append(b, "\n\n"...)
}

// appendJSON appends d as json.Marshal encodes it (field order and names of
// its tags): the delta is the most frequent event and is encoded at write
// time, for each subscriber.
func (d *deltaProps) appendJSON(b []byte) []byte {
	b = append(b, `{"sessionID":`...)
	b = jsonstr.Append(b, d.SessionID)
	b = append(b, `,"messageID":`...)
	b = jsonstr.Append(b, d.MessageID)
	b = append(b, `,"partID":`...)
	b = jsonstr.Append(b, d.PartID)
	b = append(b, `,"field":`...)
	b = jsonstr.Append(b, d.Field)
	b = append(b, `,"delta":`...)
	b = jsonstr.Append(b, d.Delta)
	return append(b, '}')
}

// hub fans events out to the subscribers (SSE clients). Publishing never
// waits for a client: each subscriber has its own queue (internal/queue,
// Disconnect policy). publish reads the current list of subscribers,
// which subscribe and unsubscribe replace (copy on write).
//
// pub is the one lock every session's events pass through, and it is
// kept on purpose: it gives each event its id and queues it for every
// subscriber in one step, so that ids ascend on every stream and every
// stream gets the events in the same order (a client that follows two
// streams, or a reconnecting one, sees one history). Sharding it by
// session would keep each session's order but not the ids' on a stream
// that carries many sessions (every /event stream). What it covers is
// short and allocates nothing: an id and one queue push per subscriber;
// encoding, the mapping of changes and the transcripts are done before
// it, under the session's own lock.
type hub struct {
	size int
	subs atomic.Pointer[[]*subscriber] // read-only once stored
	pub  sync.Mutex                    // serializes publish and barrier

	mu     sync.Mutex // serializes subscribe, unsubscribe and close
	closed bool
	joined chan struct{} // closed (and replaced) by each subscribe
}

func newHub(size int) *hub {
	if size <= 0 {
		size = DefaultQueueSize
	}
	h := &hub{size: size, joined: make(chan struct{})}
	h.subs.Store(&[]*subscriber{})
	return h
}

// subscriber is one SSE client: a directory filter ("" = every
// directory) and a bounded queue. Below QueueSize events everything is
// queued. Above it a delta joins the latest queued delta of the same part
// when no other event of the same session lies between them (mergeDelta:
// no session's order changes and no text is lost); anything else is still
// queued, up to hardFactor × QueueSize, past which the subscriber is cut
// off (queue.ErrLagging: its stream ends). Nothing is ever dropped from a
// live subscriber.
type subscriber struct {
	dir    string
	global bool
	*queue.Queue[*busEvent]
}

// subscribe adds a subscriber whose queue starts with first (the
// server.connected event), so that nothing published after the call is
// missed.
func (h *hub) subscribe(dir string, global bool, first *busEvent) *subscriber {
	s := &subscriber{dir: dir, global: global, Queue: queue.New(queue.Options[*busEvent]{
		Capacity: h.size, Merge: mergeDelta, Overflow: queue.Disconnect, Factor: hardFactor,
	})}
	s.Push(first)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		s.Abort(nil)
		return s
	}
	subs := append(slices.Clone(*h.subs.Load()), s)
	h.subs.Store(&subs)
	close(h.joined)
	h.joined = make(chan struct{})
	return s
}

// streamFor reports whether an /event stream (not /global/event) gets the
// events of directory dir, and returns a channel closed at the next
// subscribe.
func (h *hub) streamFor(dir string) (bool, <-chan struct{}) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, s := range *h.subs.Load() {
		if !s.global && (s.dir == "" || s.dir == dir) {
			return true, h.joined
		}
	}
	return false, h.joined
}

func (h *hub) unsubscribe(s *subscriber) {
	h.mu.Lock()
	subs := slices.DeleteFunc(slices.Clone(*h.subs.Load()), func(x *subscriber) bool { return x == s })
	h.subs.Store(&subs)
	h.mu.Unlock()
	s.Abort(nil)
}

// publish gives e its id (unless it has one) and queues it for every
// subscriber that wants it. It never waits for a client; each push takes only its queue's own
// lock, under h.pub (see hub).
func (h *hub) publish(e *busEvent) {
	h.pub.Lock()
	defer h.pub.Unlock()
	if e.id == "" {
		e.id = id.Ascending(id.Event)
	}
	for _, s := range *h.subs.Load() {
		if s.dir == "" || s.global || s.dir == e.dir {
			_ = s.Push(e) // fails only for a subscriber that is gone or cut off
		}
	}
}

// barrier queues a barrier (busEvent.reached) for every subscriber that
// gets the events of directory dir, and returns their channels: each is
// closed when that subscriber's client has been sent every event
// published before the call. A subscriber that goes away before then
// never closes its channel (wait with a bound).
func (h *hub) barrier(dir string) []chan struct{} {
	h.pub.Lock()
	defer h.pub.Unlock()
	var out []chan struct{}
	for _, s := range *h.subs.Load() {
		if s.dir == "" || s.global || s.dir == dir {
			e := &busEvent{typ: "barrier", dir: dir, reached: make(chan struct{})}
			if s.Push(e) == nil {
				out = append(out, e.reached)
			}
		}
	}
	return out
}

// close ends every subscriber's stream (server shutdown).
func (h *hub) close() {
	h.mu.Lock()
	h.closed = true
	subs := *h.subs.Load()
	h.subs.Store(&[]*subscriber{})
	h.mu.Unlock()
	for _, s := range subs {
		s.Abort(nil)
	}
}

// mergeDelta appends e's delta to the latest queued delta of the same part,
// looking back past events of other sessions only (queue.Options.Merge).
// The queued event is shared with the other subscribers: it is replaced
// by a joined copy, never modified.
func mergeDelta(prev **busEvent, e *busEvent) queue.Verdict {
	switch {
	case e.delta == nil:
		return queue.Stop
	case (*prev).session != e.session:
		return queue.Skip
	}
	p := (*prev).delta
	if p == nil || p.PartID != e.delta.PartID || p.Field != e.delta.Field || len(p.Delta)+len(e.delta.Delta) > maxMergedDelta {
		return queue.Stop
	}
	joined := **prev
	d := *p
	d.Delta += e.delta.Delta
	joined.delta = &d
	*prev = &joined
	return queue.Merged
}
