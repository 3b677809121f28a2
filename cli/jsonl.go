package cli

import (
	"bufio"
	"fmt"
	"io"
	"sync"

	"github.com/agentpool/agentpool/event"
)

// jsonlSink writes run's `--output jsonl` stream: one event per line,
// through a buffer, flushed as soon as the stream pauses. A program that
// reads the lines as they come (a token stream shown live) gets each
// delta within moments of its emission, while a busy run still writes in
// large batches: the flusher goroutine flushes whatever accumulated since
// its last flush each time it wakes. Lifecycle events are flushed at once.
type jsonlSink struct {
	mu   sync.Mutex
	w    *bufio.Writer
	errw io.Writer
	buf  []byte

	kick chan struct{} // an unflushed write happened (capacity 1)
	done chan struct{} // closed by stop: the flusher ends
	wg   sync.WaitGroup
	once sync.Once
}

func newJSONLSink(w *bufio.Writer, errw io.Writer) *jsonlSink {
	s := &jsonlSink{w: w, errw: errw, kick: make(chan struct{}, 1), done: make(chan struct{})}
	s.wg.Go(s.flusher)
	return s
}

// Emit implements event.Sink.
func (s *jsonlSink) Emit(e event.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var err error
	s.buf, err = event.AppendJSON(s.buf[:0], e)
	if err != nil {
		fmt.Fprintln(s.errw, "agentpool: encode event:", err)
		return
	}
	s.buf = append(s.buf, '\n')
	s.w.Write(s.buf)
	if event.IsLifecycle(e) {
		s.w.Flush()
		return
	}
	select {
	case s.kick <- struct{}{}:
	default: // a flush is due already
	}
}

func (s *jsonlSink) flusher() {
	for {
		select {
		case <-s.kick:
			s.mu.Lock()
			s.w.Flush()
			s.mu.Unlock()
		case <-s.done:
			return
		}
	}
}

// stop ends the flusher and waits for it; the caller flushes what is
// left. Later calls do nothing.
func (s *jsonlSink) stop() {
	s.once.Do(func() { close(s.done) })
	s.wg.Wait()
}
