package agui

import (
	"context"
	"net/http"
	"time"
)

// sseWriter writes a run's events to its client as server-sent events:
// what the queue gives in one write and one flush, at most once per
// interval (Options.FlushInterval), so that the deltas of a model share
// the system calls of both ends of the socket; the first write after a
// quieter spell goes at once. The write deadline (Options.WriteTimeout)
// is moved once per eighth of the timeout, not per write: setting it
// arms a timer of the poller.
type sseWriter struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	every   time.Duration // the least time between two writes; <= 0: none
	timeout time.Duration

	started  bool      // the response's header was written
	buf      []byte    // the frames of one write
	last     time.Time // the last write
	deadline time.Time // the write deadline set
	pause    *time.Timer
}

func newSSEWriter(w http.ResponseWriter, every, timeout time.Duration) *sseWriter {
	return &sseWriter{w: w, rc: http.NewResponseController(w), every: every, timeout: timeout}
}

// pace waits until the interval since the last write is over, or ctx
// ends: what comes meanwhile goes out with the next write.
func (sw *sseWriter) pace(ctx context.Context) {
	if sw.every <= 0 || sw.last.IsZero() {
		return
	}
	d := sw.every - time.Since(sw.last)
	if d <= 0 {
		return
	}
	if sw.pause == nil {
		sw.pause = time.NewTimer(d)
	} else {
		sw.pause.Reset(d)
	}
	select {
	case <-sw.pause.C:
	case <-ctx.Done():
	}
}

// write writes batch, after the response's header the first time, and
// flushes it.
func (sw *sseWriter) write(batch []item) error {
	if !sw.started {
		sw.started = true
		h := sw.w.Header()
		h.Set("Content-Type", "text/event-stream")
		h.Set("Cache-Control", "no-cache")
		h.Set("X-Accel-Buffering", "no")
		sw.w.WriteHeader(http.StatusOK)
	}
	sw.buf = sw.buf[:0]
	for i := range batch {
		sw.buf = batch[i].appendSSE(sw.buf)
	}
	sw.last = time.Now()
	if sw.deadline.Sub(sw.last) < sw.timeout {
		// Every write has the timeout at least, the deadline moving once
		// per eighth of it.
		sw.deadline = sw.last.Add(sw.timeout + sw.timeout/8)
		_ = sw.rc.SetWriteDeadline(sw.deadline)
	}
	if _, err := sw.w.Write(sw.buf); err != nil {
		return err
	}
	return sw.rc.Flush()
}

// close clears the write deadline.
func (sw *sseWriter) close() { _ = sw.rc.SetWriteDeadline(time.Time{}) }
