package termtext

import (
	"io"
	"sync"
	"unicode/utf8"
)

// Writer writes what it is given through Text to the writer it wraps.
// A character split across two writes is kept whole: the start of an
// incomplete UTF-8 sequence at the end of a write waits for the next one
// (at most 3 bytes, lost if the stream ends there, as invalid UTF-8
// would be shown as U+FFFD anyway). A CR LF split across two writes is
// shown as ␍ and a line feed. Safe for concurrent use.
type Writer struct {
	mu      sync.Mutex
	w       io.Writer
	pending []byte // the start of a character cut by the end of the last write
}

// NewWriter returns a Writer to w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// Write writes p through Text. It reports len(p) written unless the
// wrapped writer fails.
func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	s := string(append(w.pending, p...))
	w.pending = w.pending[:0]
	if cut := incompleteTail(s); cut < len(s) {
		w.pending = append(w.pending, s[cut:]...)
		s = s[:cut]
	}
	if _, err := io.WriteString(w.w, Text(s)); err != nil {
		return 0, err
	}
	return len(p), nil
}

// incompleteTail is where the UTF-8 sequence that s ends in starts when
// it is cut short (a later write may complete it), else len(s).
func incompleteTail(s string) int {
	for i := len(s) - 1; i >= 0 && i >= len(s)-utf8.UTFMax+1; i-- {
		if utf8.RuneStart(s[i]) {
			if s[i] >= utf8.RuneSelf && !utf8.FullRuneInString(s[i:]) {
				return i
			}
			break
		}
	}
	return len(s)
}

// JSONWriter writes JSON text with its C1 controls (which only a JSON
// string can hold) escaped as \u0080–\u009f: the same JSON values, with
// nothing a terminal acts on. The C0 controls are escaped by every JSON
// encoder already. Safe for concurrent use.
type JSONWriter struct {
	mu      sync.Mutex
	w       io.Writer
	pending bool // the last write ended in 0xC2, the first byte of a C1 control in UTF-8
	in, out []byte
}

// NewJSONWriter returns a JSONWriter to w.
func NewJSONWriter(w io.Writer) *JSONWriter { return &JSONWriter{w: w} }

// Write writes p with its C1 controls escaped. It reports len(p) written
// unless the wrapped writer fails.
func (w *JSONWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	in := w.in[:0]
	if w.pending {
		in = append(in, 0xc2)
	}
	in = append(in, p...)
	w.pending = len(in) > 0 && in[len(in)-1] == 0xc2
	if w.pending {
		in = in[:len(in)-1]
	}
	w.in, w.out = in, EscapeJSONC1(w.out[:0], in)
	if _, err := w.w.Write(w.out); err != nil {
		return 0, err
	}
	return len(p), nil
}

// EscapeJSONC1 appends src to dst with each C1 control (0xC2 0x80–0x9F in
// UTF-8) written as a JSON escape, \u0080–\u009f. In JSON text those
// bytes can only be inside a string, where the escape means the same
// character.
func EscapeJSONC1(dst, src []byte) []byte {
	const hex = "0123456789abcdef"
	start := 0
	for i := 0; i+1 < len(src); i++ {
		if src[i] == 0xc2 && src[i+1] >= 0x80 && src[i+1] <= 0x9f {
			dst = append(dst, src[start:i]...)
			dst = append(dst, '\\', 'u', '0', '0', hex[src[i+1]>>4], hex[src[i+1]&0xf])
			i++
			start = i + 1
		}
	}
	return append(dst, src[start:]...)
}
