package termtext

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestText(t *testing.T) {
	cases := []struct{ name, in, text, line string }{
		{"plain", "hello, world", "hello, world", "hello, world"},
		{"empty", "", "", ""},
		{"unicode", "héllo 日本語 😀 →", "héllo 日本語 😀 →", "héllo 日本語 😀 →"},
		{"newline and tab", "a\n\tb\n", "a\n\tb\n", "a  b "},
		{"CR LF", "one\r\ntwo\r\n", "one\ntwo\n", "one two "},
		{"bare CR", "safe\rEVIL", "safe␍EVIL", "safe␍EVIL"},
		{"backspace", "rm -rf /\b\b\b\bls", "rm -rf /␈␈␈␈ls", "rm -rf /␈␈␈␈ls"},
		{"BEL", "ding\a", "ding␇", "ding␇"},
		{"NUL", "a\x00b", "a␀b", "a␀b"},
		{"DEL", "a\x7fb", "a␡b", "a␡b"},
		{"OSC 52 clipboard", "\x1b]52;c;aGk=\x07", "␛]52;c;aGk=␇", "␛]52;c;aGk=␇"},
		{"OSC with ST", "\x1b]0;title\x1b\\", "␛]0;title␛\\", "␛]0;title␛\\"},
		{"CSI cursor", "\x1b[2J\x1b[1;1Hx", "␛[2J␛[1;1Hx", "␛[2J␛[1;1Hx"},
		{"C1 CSI", "\u009b31mred", "␛[31mred", "␛[31mred"},
		{"C1 OSC", "\u009d52;c;aGk=\u009c", "␛]52;c;aGk=␛\\", "␛]52;c;aGk=␛\\"},
		{"C1 NEL", "a\u0085b", "a␛Eb", "a␛Eb"},
		{"raw C1 byte", "a\x9bb", "a\ufffdb", "a\ufffdb"},
		{"invalid UTF-8", "a\xffb\xc3", "a\ufffdb\ufffd", "a\ufffdb\ufffd"},
		{"vertical tab, form feed", "\v\f", "␋␌", "␋␌"},
		{"neighbours kept", "\u00a0\u00a9 ~", "\u00a0\u00a9 ~", "\u00a0\u00a9 ~"},
	}
	for _, c := range cases {
		if got := Text(c.in); got != c.text {
			t.Errorf("%s: Text(%q) = %q, want %q", c.name, c.in, got, c.text)
		}
		if got := Line(c.in); got != c.line {
			t.Errorf("%s: Line(%q) = %q, want %q", c.name, c.in, got, c.line)
		}
	}
}

// TestTextKeepsCleanTextWithoutCopy: the common case costs no allocation.
func TestTextKeepsCleanTextWithoutCopy(t *testing.T) {
	s := strings.Repeat("a line of model output, with é and 😀\n\t", 20)
	if n := testing.AllocsPerRun(10, func() { _ = Text(s) }); n != 0 {
		t.Errorf("Text of clean text allocates %v times", n)
	}
}

// checkSafe fails unless out holds nothing a terminal acts on: valid
// UTF-8, no C0 control but the line feed and tab (none when oneLine), no
// DEL, no C1 control.
func checkSafe(t *testing.T, in, out string, oneLine bool) {
	t.Helper()
	if !utf8.ValidString(out) {
		t.Fatalf("output of %q is not UTF-8: %q", in, out)
	}
	for _, r := range out {
		if r < 0x20 && (oneLine || r != '\n' && r != '\t') || r == 0x7f || isC1(r) {
			t.Fatalf("output of %q holds control %U: %q", in, r, out)
		}
	}
}

// isClean reports whether s has nothing Text changes.
func isClean(s string) bool {
	return utf8.ValidString(s) && !strings.ContainsFunc(s, func(r rune) bool {
		return r < 0x20 && r != '\n' && r != '\t' || r == 0x7f || isC1(r)
	})
}

var fuzzSeeds = []string{
	"", "plain", "a\nb\tc", "\x1b]52;c;aGk=\x07", "\x1b[2J", "\u009b2J", "\u009d0;x\u009c",
	"a\r\nb", "a\rb", "\b\b", "\x00\x7f", "\xff\xfe", "\xe2\x82", "😀", "\xf0\x9f\x98",
}

// FuzzText: whatever goes in, what comes out holds no control a terminal
// acts on, and text that had none comes out unchanged.
func FuzzText(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		text, line := Text(s), Line(s)
		checkSafe(t, s, text, false)
		checkSafe(t, s, line, true)
		if isClean(s) && text != s {
			t.Fatalf("Text changed clean text %q to %q", s, text)
		}
		if Text(text) != text || Line(line) != line {
			t.Fatalf("not idempotent on %q: %q, %q", s, text, line)
		}
	})
}

// writeSplit writes s to a Writer in two writes, cut at k.
func writeSplit(s string, k int) string {
	var out strings.Builder
	w := NewWriter(&out)
	w.Write([]byte(s[:k]))
	w.Write([]byte(s[k:]))
	return out.String()
}

func TestWriterKeepsSplitCharacters(t *testing.T) {
	s := "é😀\x1b[2J\u009b日本"
	for k := range len(s) + 1 {
		if got := writeSplit(s, k); got != Text(s) {
			t.Errorf("cut at %d: %q, want %q", k, got, Text(s))
		}
	}
}

// FuzzWriter: a stream cut anywhere comes out as Text of the whole, and
// as safe (a CR LF cut in two is a visible ␍ and a line feed; the start
// of a character cut off by the end of the stream is dropped).
func FuzzWriter(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s, uint(len(s)/2))
	}
	f.Fuzz(func(t *testing.T, s string, cut uint) {
		k := int(cut % uint(len(s)+1))
		got := writeSplit(s, k)
		checkSafe(t, s, got, false)
		crlfCut := k > 0 && k < len(s) && s[k-1] == '\r' && s[k] == '\n'
		if !crlfCut && incompleteTail(s) == len(s) && got != Text(s) {
			t.Fatalf("%q cut at %d: %q, want %q", s, k, got, Text(s))
		}
	})
}

func TestJSONWriter(t *testing.T) {
	v := map[string]string{"t": "a\u009b2J\u009d52;c;x\u0085 é £ \x1b 😀"}
	enc, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"t":"a\u009b2J\u009d52;c;x\u0085 é £ \u001b 😀"}`
	for k := range len(enc) + 1 {
		var out bytes.Buffer
		w := NewJSONWriter(&out)
		w.Write(enc[:k])
		w.Write(enc[k:])
		if out.String() != want {
			t.Errorf("cut at %d: %s, want %s", k, out.String(), want)
		}
	}
}

// FuzzJSONWriter: JSON text written through a JSONWriter, cut anywhere,
// holds no C1 control and decodes to the same value.
func FuzzJSONWriter(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s, uint(3))
	}
	f.Fuzz(func(t *testing.T, s string, cut uint) {
		enc, err := json.Marshal([]string{s, "£" + s})
		if err != nil {
			t.Fatal(err)
		}
		k := int(cut % uint(len(enc)+1))
		var out bytes.Buffer
		w := NewJSONWriter(&out)
		w.Write(enc[:k])
		w.Write(enc[k:])
		if strings.ContainsFunc(out.String(), isC1) {
			t.Fatalf("C1 control left in %q", out.String())
		}
		var want, got []string
		if err := json.Unmarshal(enc, &want); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(out.Bytes(), &got); err != nil {
			t.Fatalf("%q: %v", out.String(), err)
		}
		if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
			t.Fatalf("decoded %q, want %q", got, want)
		}
	})
}
