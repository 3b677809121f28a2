package tailbuf

import (
	"bytes"
	"strings"
	"sync"
)

// Buffer keeps the last Max bytes written to it. The zero value keeps
// nothing; use New.
type Buffer struct {
	mu      sync.Mutex
	buf     []byte
	max     int
	dropped bool // bytes before buf were dropped
}

// New returns a Buffer that keeps the last max bytes.
func New(max int) *Buffer { return &Buffer{max: max} }

// Write keeps the end of what was written so far. It never fails.
func (t *Buffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
		t.dropped = true
	}
	return len(p), nil
}

// String returns the kept text: from the first whole line when the start
// was dropped ("…" then a line end first), invalid UTF-8 replaced, line
// ends at its end trimmed.
func (t *Buffer) String() string {
	t.mu.Lock()
	b, dropped := bytes.Clone(t.buf), t.dropped // Write reuses buf's array
	t.mu.Unlock()
	prefix := ""
	if dropped {
		if i := bytes.IndexByte(b, '\n'); i >= 0 && i < len(b)-1 {
			b = b[i+1:]
		}
		prefix = "…\n"
	}
	return prefix + strings.ToValidUTF8(strings.TrimRight(string(b), "\r\n"), "\uFFFD")
}
