package shell

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// maxOutputChars bounds the output a result shows (Claude Code's 30,000).
const maxOutputChars = 30000

// isCharStart reports whether b begins a character (is not a UTF-8
// continuation byte). Characters are counted this way throughout, so a
// count of invalid bytes stays consistent with itself.
func isCharStart(b byte) bool { return b&0xC0 != 0x80 }

func countChars(p []byte) int {
	n := 0
	for _, b := range p {
		if isCharStart(b) {
			n++
		}
	}
	return n
}

// capture is an io.Writer that keeps the first and the last characters of
// a stream of any length: the head up to half the limit, the tail up to
// the other half, and a count of everything.
type capture struct {
	headChars, tailChars int
	head                 []byte
	headN                int // characters in head
	headFull             bool
	tail                 []byte // bytes after the head (its end, once long)
	total                int    // characters written
}

func newCapture(limit int) *capture {
	h := limit / 2
	return &capture{headChars: h, tailChars: limit - h}
}

func (c *capture) Write(p []byte) (int, error) {
	n := len(p)
	c.total += countChars(p)
	if !c.headFull {
		i := 0
		for ; i < len(p); i++ {
			if isCharStart(p[i]) {
				if c.headN == c.headChars {
					c.headFull = true
					break
				}
				c.headN++
			}
		}
		c.head = append(c.head, p[:i]...)
		p = p[i:]
	}
	if len(p) > 0 {
		c.tail = append(c.tail, p...)
		// Keep at least tailChars characters (utf8.UTFMax bytes each at
		// most); compact when twice that accumulated.
		if keep := c.tailChars * utf8.UTFMax; len(c.tail) > 2*keep {
			c.tail = append(c.tail[:0], c.tail[len(c.tail)-keep:]...)
		}
	}
	return n, nil
}

// text returns what was written, cut in the middle when longer than the
// limit, and how many characters were cut.
func (c *capture) text() (string, int) {
	if c.total-c.headN <= c.tailChars {
		// Everything fits; the tail was never compacted.
		return clean(string(c.head) + string(c.tail)), 0
	}
	t := c.tail
	n := 0
	i := len(t)
	for i > 0 {
		i--
		if isCharStart(t[i]) {
			n++
			if n == c.tailChars {
				break
			}
		}
	}
	t = t[i:]
	cut := c.total - c.headN - countChars(t)
	return clean(string(c.head)) + cutMarker(cut) + clean(string(t)), cut
}

// capText cuts s like a capture of limit characters would.
func capText(s string, limit int) (string, int) {
	c := newCapture(limit)
	_, _ = c.Write([]byte(s))
	return c.text()
}

func cutMarker(n int) string {
	return fmt.Sprintf("\n\n[... %d characters cut from the middle of the output ...]\n\n", n)
}

func clean(s string) string { return strings.ToValidUTF8(s, "\uFFFD") }

// firstLine returns the first non-empty line of s cut to n characters.
func firstLine(s string, n int) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = strings.TrimSpace(s[:i]) + " …"
	}
	if utf8.RuneCountInString(s) > n {
		r := []rune(s)
		s = string(r[:n-1]) + "…"
	}
	return s
}

// signalNumbers maps the POSIX signal names a terminal may report to
// their numbers (the same on every Unix).
var signalNumbers = map[string]int{
	"SIGHUP": 1, "SIGINT": 2, "SIGQUIT": 3, "SIGABRT": 6, "SIGKILL": 9,
	"SIGSEGV": 11, "SIGPIPE": 13, "SIGALRM": 14, "SIGTERM": 15,
}
