package cli

import (
	"bytes"
	"io"
	"sync"
)

// warningWriter carries the runtime's warnings to stderr. While the live
// status tree redraws stderr in place, a warning written between two
// frames would be drawn over or would shift every later frame, so hold
// keeps them until release writes them after the tree's last frame (the
// tree shows what they are about, such as a refused spawn, as it
// happens).
type warningWriter struct {
	mu   sync.Mutex
	w    io.Writer
	held *bytes.Buffer // nil: write through
}

func (ww *warningWriter) Write(p []byte) (int, error) {
	ww.mu.Lock()
	defer ww.mu.Unlock()
	if ww.held != nil {
		return ww.held.Write(p)
	}
	return ww.w.Write(p)
}

// hold keeps later warnings until release.
func (ww *warningWriter) hold() {
	ww.mu.Lock()
	defer ww.mu.Unlock()
	if ww.held == nil {
		ww.held = &bytes.Buffer{}
	}
}

// release writes the held warnings and writes through from then on.
func (ww *warningWriter) release() {
	ww.mu.Lock()
	defer ww.mu.Unlock()
	if ww.held != nil {
		ww.w.Write(ww.held.Bytes())
		ww.held = nil
	}
}
