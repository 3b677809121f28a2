package opencode

import (
	"context"
	"encoding/json"
	"sync"
	"time"
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
	// mergeScan bounds how far back a delta looks for one to join.
	mergeScan = 64
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
}

// appendFrame appends the SSE frame of e: `data: {...}\n\n`; global frames
// are {directory, payload}.
func (e *busEvent) appendFrame(b []byte, global bool) []byte {
	b = append(b, "data: "...)
	if global {
		b = append(b, `{"directory":`...)
		b = appendJSONString(b, e.dir)
		b = append(b, `,"payload":`...)
	}
	b = append(b, `{"id":`...)
	b = appendJSONString(b, e.id)
	b = append(b, `,"type":`...)
	b = appendJSONString(b, e.typ)
	b = append(b, `,"properties":`...)
	if e.delta != nil {
		p, _ := json.Marshal(e.delta)
		b = append(b, p...)
	} else {
		b = append(b, e.props...)
	}
	b = append(b, '}')
	if global {
		b = append(b, '}')
	}
	return append(b, "\n\n"...)
}

func appendJSONString(b []byte, s string) []byte {
	q, _ := json.Marshal(s)
	return append(b, q...)
}

// hub fans events out to the subscribers (SSE clients). Publishing never
// blocks: each subscriber has its own queue.
type hub struct {
	mu     sync.Mutex
	subs   map[*subscriber]struct{}
	closed bool
	size   int
}

func newHub(size int) *hub {
	if size <= 0 {
		size = DefaultQueueSize
	}
	return &hub{subs: map[*subscriber]struct{}{}, size: size}
}

// subscriber is one SSE client: a directory filter ("" = every
// directory) and a bounded queue.
type subscriber struct {
	dir    string
	global bool

	mu      sync.Mutex
	items   []*busEvent
	spare   []*busEvent
	soft    int
	hard    int
	dead    bool // closed, or fell more than hard events behind
	cut     bool // dead because it fell behind
	wake    chan struct{}
	merged  int
	maxSeen int
}

// subscribe adds a subscriber whose queue starts with first (the
// server.connected event), so that nothing published after the call is
// missed.
func (h *hub) subscribe(dir string, global bool, first *busEvent) *subscriber {
	s := &subscriber{dir: dir, global: global, soft: h.size, hard: h.size * hardFactor, wake: make(chan struct{}, 1)}
	s.items = append(s.items, first)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		s.dead = true
		return s
	}
	h.subs[s] = struct{}{}
	return s
}

func (h *hub) unsubscribe(s *subscriber) {
	h.mu.Lock()
	delete(h.subs, s)
	h.mu.Unlock()
	s.close(false)
}

// publish queues e for every subscriber that wants it.
func (h *hub) publish(e *busEvent) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for s := range h.subs {
		if s.dir == "" || s.global || s.dir == e.dir {
			s.push(e)
		}
	}
}

// close ends every subscriber's stream (server shutdown).
func (h *hub) close() {
	h.mu.Lock()
	h.closed = true
	subs := h.subs
	h.subs = map[*subscriber]struct{}{}
	h.mu.Unlock()
	for s := range subs {
		s.close(false)
	}
}

func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// push queues e. Below the soft bound everything is queued. Above it a
// delta joins the latest queued delta of the same part when no other event
// of the same session lies between them (so no session's order changes and
// no text is lost); anything else is still queued, up to the hard bound,
// past which the subscriber is cut off. Nothing is ever dropped from a
// live subscriber.
func (s *subscriber) push(e *busEvent) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.dead {
		return
	}
	switch {
	case len(s.items) < s.soft:
	case e.delta != nil && s.merge(e):
		s.merged++
		return
	case len(s.items) >= s.hard:
		s.dead, s.cut, s.items = true, true, nil
		signal(s.wake)
		return
	}
	s.items = append(s.items, e)
	s.maxSeen = max(s.maxSeen, len(s.items))
	signal(s.wake)
}

// merge appends e's delta to the latest queued delta of the same part,
// looking back past events of other sessions only. s.mu is held.
func (s *subscriber) merge(e *busEvent) bool {
	for i, n := len(s.items)-1, 0; i >= 0 && n < mergeScan; i, n = i-1, n+1 {
		prev := s.items[i]
		if prev.session != e.session {
			continue
		}
		p := prev.delta
		if p == nil || p.PartID != e.delta.PartID || p.Field != e.delta.Field || len(p.Delta)+len(e.delta.Delta) > maxMergedDelta {
			return false
		}
		joined := *prev
		d := *p
		d.Delta += e.delta.Delta
		joined.delta = &d
		s.items[i] = &joined
		return true
	}
	return false
}

func (s *subscriber) close(cut bool) {
	s.mu.Lock()
	s.dead = true
	s.cut = s.cut || cut
	s.items = nil
	s.mu.Unlock()
	signal(s.wake)
}

// take waits for events and returns all of them, in order. It returns
// false when the subscriber was closed or cut off, or ctx ended; nil and
// true when idle ticks first. The slice is valid until the next call.
func (s *subscriber) take(ctx context.Context, idle <-chan time.Time) ([]*busEvent, bool) {
	for {
		s.mu.Lock()
		if s.dead {
			s.mu.Unlock()
			return nil, false
		}
		if len(s.items) > 0 {
			out := s.items
			s.items, s.spare = s.spare[:0], out
			s.mu.Unlock()
			return out, true
		}
		s.mu.Unlock()
		select {
		case <-s.wake:
		case <-ctx.Done():
			return nil, false
		case <-idle:
			return nil, true
		}
	}
}

func (s *subscriber) stats() (merged, maxQueued int, cut bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.merged, s.maxSeen, s.cut
}
