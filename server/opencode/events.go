package opencode

import (
	"net/http"
	"time"

	"github.com/agentpool/agentpool/id"
)

// eventStreams serves the event streams (GET /event, /global/event):
// each client a subscriber of the hub.
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
	first := &busEvent{id: id.Ascending(id.Event), typ: "server.connected", dir: connDir, props: []byte("{}")}
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
	var buf []byte
	for {
		batch, err := sub.TakeOr(r.Context(), ticker.C)
		if err != nil {
			break // unsubscribed, cut off (too far behind) or the client is gone
		}
		buf = buf[:0]
		if batch == nil {
			// Idle: a comment line keeps proxies and clients from timing out.
			buf = append(buf, ": ping\n\n"...)
		}
		for _, e := range batch {
			buf = e.appendFrame(buf, global)
		}
		_ = rc.SetWriteDeadline(time.Now().Add(s.opts.WriteTimeout))
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
	_ = rc.SetWriteDeadline(time.Time{})
	if st := sub.Stats(); st.Lagged || st.Merged > 0 {
		s.log.Warn("opencode: slow event client", "merged_deltas", st.Merged, "max_queued", st.MaxDepth, "disconnected", st.Lagged)
	}
}
