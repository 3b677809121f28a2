package termtext

import (
	"strings"
	"unicode/utf8"
)

// Text returns s as it may be printed on a terminal: line feeds and tabs
// kept, CR LF as LF, every other control shown visibly (see the package
// doc). s comes back as it is when it has nothing to change.
func Text(s string) string { return clean(s, false) }

// Line is Text on one line: line feeds, CR LF and tabs become spaces. For
// a name, title or message shown within a line or a table cell.
func Line(s string) string { return clean(s, true) }

func clean(s string, oneLine bool) string {
	i := firstUnsafe(s, oneLine)
	if i == len(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	b.WriteString(s[:i])
	for i < len(s) {
		c := s[i]
		if c < utf8.RuneSelf {
			i++
			switch {
			case c == '\r' && i < len(s) && s[i] == '\n':
				// CR LF: the line ends here, as with LF alone.
				continue
			case c == '\n' || c == '\t':
				if oneLine {
					c = ' '
				}
				b.WriteByte(c)
			case c < 0x20:
				b.WriteRune(0x2400 + rune(c)) // the control pictures: ␀ … ␟
			case c == 0x7f:
				b.WriteRune('␡')
			default:
				b.WriteByte(c)
			}
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b.WriteRune(utf8.RuneError)
		case isC1(r):
			b.WriteRune('␛')
			b.WriteByte(byte(r - 0x40)) // U+009B → '[': the 7-bit form ESC [
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// firstUnsafe is the index of the first byte of s that clean would
// change, or len(s).
func firstUnsafe(s string, oneLine bool) int {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c < 0x20 && (oneLine || c != '\n' && c != '\t') || c == 0x7f {
				return i
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 || isC1(r) {
			return i
		}
		i += size
	}
	return len(s)
}

// isC1 reports whether r is a C1 control, U+0080–U+009F.
func isC1(r rune) bool { return r >= 0x80 && r <= 0x9f }
