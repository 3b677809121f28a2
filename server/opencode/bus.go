package opencode

import (
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

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
// subscriber queue; a coalesced delta is a new value. It gets its id when
// a stream writes it (appendFrame): each stream numbers its own events.
type busEvent struct {
	typ     string
	dir     string // directory of the session the event belongs to
	session string // "" for server events
	props   []byte // encoded properties (nil for a delta)
	delta   *deltaProps
	// joined is set on a delta that a subscriber's queue made by joining
	// deltas (mergeDelta): that queue alone holds it, so later deltas are
	// appended to it in place, amortized, instead of copying its text.
	joined *joinedDelta

	// reached, when not nil, makes the event a barrier: nothing is
	// written for it; the stream closes reached once everything queued
	// before it has been written and flushed to the client.
	reached chan struct{}
}

// deltaEvent is a delta's bus event and its properties in one allocation
// (newDelta).
type deltaEvent struct {
	busEvent
	props deltaProps
}

// joinedDelta is a delta event made by a queue's merge, with its text
// growing in a builder (d.props.Delta is the builder's text).
type joinedDelta struct {
	deltaEvent
	text strings.Builder
}

// newDelta returns the bus event of a delta of a session in directory dir.
func newDelta(dir string, d deltaProps) *busEvent {
	x := &deltaEvent{busEvent: busEvent{typ: "message.part.delta", dir: dir, session: d.SessionID}, props: d}
	x.delta = &x.props
	return &x.busEvent
}

// appendFrame appends the SSE frame of e with event id id (an id of
// package id, which JSON needs not escape): `data: {...}\n\n`; global
// frames are {directory, payload}.
func (e *busEvent) appendFrame(b []byte, global bool, id []byte) []byte {
	if e.reached != nil {
		return b // a barrier: nothing to write
	}
	b = append(b, "data: "...)
	if global {
		b = append(b, `{"directory":`...)
		b = jsonstr.Append(b, e.dir)
		b = append(b, `,"payload":`...)
	}
	b = append(b, `{"id":"`...)
	b = append(b, id...)
	b = append(b, `","type":`...)
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
// waits for a client and takes no lock of the hub: each subscriber has
// its own queue (internal/queue, Disconnect policy), and publish reads the
// current list of subscribers, which subscribe and unsubscribe replace
// (copy on write). So the only lock an event shares with the events of
// other sessions is that of each queue it is pushed to (a stream that
// carries many sessions is one queue).
//
// Order: a session's events are published under the session's lock
// (eventMapper), so every stream gets them in that order. Events of
// different sessions published at once may be interleaved differently on
// two streams. Ids are given by each stream as it writes (stream), from
// its own generator: they ascend on every stream, and the same event has
// a different id on two streams.
type hub struct {
	size int
	subs atomic.Pointer[[]*subscriber] // read-only once stored

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
// when no other event of the same session lies between them, however many
// events of other sessions do (mergeDelta, found through the queue's index
// of each session's latest event:
// no session's order changes and no text is lost); anything else is still
// queued, up to hardFactor × QueueSize, past which the subscriber is cut
// off (queue.ErrLagging: its stream ends). Nothing is ever dropped from a
// live subscriber.
type subscriber struct {
	dir    string
	global bool
	ids    id.Generator // this stream's event ids (appendBatch)
	*queue.Queue[*busEvent]
}

// appendBatch appends to b the frames of a batch the stream took, each
// with an id of the stream's own, ascending. Only the stream's writer
// calls it.
func (s *subscriber) appendBatch(b []byte, batch []*busEvent, now time.Time) []byte {
	var ev [32]byte // the id, made without a string
	for _, e := range batch {
		if e.reached == nil {
			b = e.appendFrame(b, s.global, s.ids.AppendAscendingAt(ev[:0], id.Event, now))
		}
	}
	return b
}

// subscribe adds a subscriber whose queue starts with first (the
// server.connected event), so that nothing published after the call is
// missed.
func (h *hub) subscribe(dir string, global bool, first *busEvent) *subscriber {
	s := &subscriber{dir: dir, global: global, Queue: queue.New(queue.Options[*busEvent]{
		Capacity: h.size, Merge: mergeDelta, Overflow: queue.Disconnect, Factor: hardFactor,
		// A stream carries every session: the delta a new one may join
		// can be thousands of events back.
		Stream: func(e *busEvent) string { return e.session },
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

// streamFor reports whether an event stream gets the events of directory
// dir (an /event stream of dir or of every directory, or a /global/event
// stream), and returns a channel closed at the next subscribe.
func (h *hub) streamFor(dir string) (bool, <-chan struct{}) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, s := range *h.subs.Load() {
		if s.global || s.dir == "" || s.dir == dir {
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

// publish queues e for every subscriber that wants it. It never waits for
// a client; each push takes only its queue's own lock (see hub).
func (h *hub) publish(e *busEvent) {
	for _, s := range *h.subs.Load() {
		if s.dir == "" || s.global || s.dir == e.dir {
			_ = s.Push(e) // fails only for a subscriber that is gone or cut off
		}
	}
}

// barrier queues a barrier (busEvent.reached) for every subscriber that
// gets the events of directory dir, and returns their channels: each is
// closed when that subscriber's client has been sent every event
// published before the call (publish returns once e is in every queue).
// A subscriber that goes away before then never closes its channel (wait
// with a bound).
func (h *hub) barrier(dir string) []chan struct{} {
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
// A published event is shared with the other subscribers: it is replaced
// by a joined copy, never modified; the copy is this queue's own, and the
// deltas that join it later are appended to it.
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
	if j := (*prev).joined; j != nil {
		j.text.WriteString(e.delta.Delta)
		j.props.Delta = j.text.String()
		return queue.Merged
	}
	j := &joinedDelta{deltaEvent: deltaEvent{busEvent: busEvent{typ: (*prev).typ, dir: (*prev).dir, session: (*prev).session}, props: *p}}
	j.text.Grow(2 * (len(p.Delta) + len(e.delta.Delta)))
	j.text.WriteString(p.Delta)
	j.text.WriteString(e.delta.Delta)
	j.props.Delta = j.text.String()
	j.delta, j.joined = &j.props, j
	*prev = &j.busEvent
	return queue.Merged
}
