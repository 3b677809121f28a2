package opencode

import (
	"context"
	"net/http"
	"time"
)

// eventStreams serves the event streams (GET /event, /global/event):
// each client a subscriber of the hub; and it lets a prompt's reply wait
// for the streams that carry the prompt's events (awaitStream,
// awaitDelivery).
type eventStreams struct {
	*base
}

// handleEvents answers GET /event: the server's events as SSE, first
// server.connected. With a directory (?directory= or the SDK's header),
// only the events of that directory's sessions.
func (s *eventStreams) handleEvents(w http.ResponseWriter, r *http.Request) {
	s.stream(w, r, requestDir(r), false)
}

// handleGlobalEvents answers GET /global/event: every directory's events,
// each frame {directory, payload}.
func (s *eventStreams) handleGlobalEvents(w http.ResponseWriter, r *http.Request) {
	s.stream(w, r, "", true)
}

func (s *eventStreams) stream(w http.ResponseWriter, r *http.Request, dir string, global bool) {
	connDir := dir
	if connDir == "" {
		connDir = s.dir
	}
	first := &busEvent{typ: "server.connected", dir: connDir, props: []byte("{}")}
	sub := s.hub.subscribe(dir, global, first)
	defer s.hub.unsubscribe(sub)

	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "keep-alive")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)

	ticker := time.NewTicker(s.opts.Heartbeat)
	defer ticker.Stop()
	var (
		buf      []byte
		deadline time.Time // the write deadline set
		last     time.Time // the last write
		pause    *time.Timer
	)
	for {
		// What is published during the pause goes out with the next
		// write (the queue joins deltas once it holds QueueSize events).
		if d := s.opts.FlushInterval - time.Since(last); s.opts.FlushInterval > 0 && !last.IsZero() && d > 0 {
			if pause == nil {
				pause = time.NewTimer(d)
			} else {
				pause.Reset(d)
			}
			select {
			case <-pause.C:
			case <-r.Context().Done():
			}
		}
		batch, err := sub.TakeOr(r.Context(), ticker.C)
		if err != nil {
			break // unsubscribed, cut off (too far behind) or the client is gone
		}
		buf = buf[:0]
		if batch == nil {
			// Idle: a comment line keeps proxies and clients from timing out.
			buf = append(buf, ": ping\n\n"...)
		}
		now := time.Now()
		buf = sub.appendBatch(buf, batch, now)
		if wt := s.opts.WriteTimeout; deadline.Sub(now) < wt {
			// Every write has WriteTimeout at least, and the deadline
			// (a timer of the poller) moves once per eighth of it.
			deadline = now.Add(wt + wt/8)
			_ = rc.SetWriteDeadline(deadline)
		}
		last = now
		_, err = w.Write(buf)
		if err == nil {
			err = rc.Flush()
		}
		if err != nil {
			s.log.Info("opencode: event client gone", "err", err)
			break
		}
		for _, e := range batch {
			if e.reached != nil {
				close(e.reached)
			}
		}
		ticker.Reset(s.opts.Heartbeat)
	}
	if pause != nil {
		pause.Stop()
	}
	_ = rc.SetWriteDeadline(time.Time{})
	if st := sub.Stats(); st.Lagged || st.Merged > 0 {
		s.log.Warn("opencode: slow event client", "merged_deltas", st.Merged, "max_queued", st.MaxDepth, "disconnected", st.Lagged)
	}
}

// maxStreamWait bounds how long a prompt waits for its client's event
// stream (awaitStream).
const maxStreamWait = 300 * time.Millisecond

// awaitStream waits, at most maxStreamWait, until an event stream gets
// session sid's events. `opencode run` opens its /event stream and posts
// its prompt at the same moment; a run that takes milliseconds (a local
// or cached model) could end before the stream is subscribed, and the
// client would print nothing. A client with its stream already open (the
// TUI reads /global/event) does not wait: a prompt of the TUI used to pay
// the whole bound, as the wait counted /event streams only. `opencode
// run` sends its /event request before its prompt (measured: 8 ms
// earlier), so that it has its stream too when a TUI is attached.
func (s *eventStreams) awaitStream(ctx context.Context, sid string) {
	dir := s.dirOfID(sid)
	timeout := time.NewTimer(maxStreamWait)
	defer timeout.Stop()
	for {
		ok, joined := s.hub.streamFor(dir)
		if ok {
			return
		}
		select {
		case <-joined:
		case <-timeout.C:
			s.log.Info("opencode: no event stream for the prompt's session; running it without waiting longer", "session", sid, "waited", maxStreamWait)
			return
		case <-ctx.Done():
			return
		}
	}
}

// maxDeliveryWait bounds how long a prompt's reply waits for slow event
// clients (awaitDelivery).
const maxDeliveryWait = 5 * time.Second

// awaitDelivery returns once every event stream that gets session sid's
// events has sent its client everything published so far, or after
// maxDeliveryWait, or when ctx ends. A client such as `opencode run` quits
// when its prompt request returns: without this it could quit before its
// event stream delivered the answer.
func (s *eventStreams) awaitDelivery(ctx context.Context, sid string) {
	barriers := s.hub.barrier(s.dirOfID(sid))
	timeout := time.NewTimer(maxDeliveryWait)
	defer timeout.Stop()
	for _, b := range barriers {
		select {
		case <-b:
		case <-timeout.C:
			s.log.Warn("opencode: an event client is slow; answering the prompt before it received every event", "session", sid)
			return
		case <-ctx.Done():
			return
		}
	}
	if len(barriers) == 0 {
		return
	}
	// Written is not yet read: `opencode run` exits as soon as the reply
	// arrives, dropping events it has received but not yet handled. A
	// short grace lets a client on the same machine handle them first.
	grace := time.NewTimer(deliveryGrace)
	defer grace.Stop()
	select {
	case <-grace.C:
	case <-ctx.Done():
	}
}

// deliveryGrace is how long a prompt's reply waits after its events were
// written to the open event streams (awaitDelivery).
const deliveryGrace = 100 * time.Millisecond
