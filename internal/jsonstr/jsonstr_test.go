package jsonstr

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// jsonStringCases are strings whose JSON encoding is easy to get wrong.
var jsonStringCases = func() []string {
	cases := []string{
		"",
		"token ",
		`"`, `\`, `\"`, `a"b\c`, `"quoted" and \back\slashes\`,
		"<script>alert('x')</script>", "a&b", "<>&", "&amp;",
		"\u2028", "\u2029", "a\u2028b\u2029c", "\u2027\u202a", // neighbours are not escaped
		"\x7f", "a\x7fb",
		"\xff", "\xfe\xff", "a\xffb", "\xc3", "\xc3(", "\xe2\x80", "\xe2\x80\xa8\xe2\x80", // invalid UTF-8
		"\xed\xa0\x80",     // a UTF-16 surrogate encoded in UTF-8: invalid
		"\xf4\x90\x80\x80", // above U+10FFFF: invalid
		"\xc0\x80",         // overlong NUL: invalid
		"\ufffd", "é", "日本語", "😀", "a😀b", "\U0010FFFF",
		"line\nbreak", "cr\rlf\n", "tab\there", "\b\f", "mixed \x00<é>\u2028\"\\\xff end",
		strings.Repeat("long plain text ", 64),
		strings.Repeat("<\x01\u2028\xff", 16),
	}
	for b := range 0x20 {
		cases = append(cases, string(rune(b)), "x"+string(rune(b))+"y")
	}
	return cases
}()

func marshalString(t testing.TB, s string) []byte {
	t.Helper()
	want, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return want
}

// TestAppendJSONString checks the string escaper against json.Marshal, byte
// for byte, appending both to an empty and to a non-empty buffer.
func TestAppendJSONString(t *testing.T) {
	for _, s := range jsonStringCases {
		want := marshalString(t, s)
		if got := Append(nil, s); !bytes.Equal(got, want) {
			t.Errorf("Append(%q) = %s, want %s", s, got, want)
		}
		if got := Append([]byte("prefix:"), s); !bytes.Equal(got, append([]byte("prefix:"), want...)) {
			t.Errorf("Append(prefix, %q) = %s, want prefix:%s", s, got, want)
		}
	}
}

// FuzzAppendJSONString checks the string escaper against json.Marshal on
// arbitrary bytes (valid UTF-8 or not).
func FuzzAppendJSONString(f *testing.F) {
	for _, s := range jsonStringCases {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want := marshalString(t, s)
		if got := Append(nil, s); !bytes.Equal(got, want) {
			t.Fatalf("Append(%q) = %s, want %s", s, got, want)
		}
	})
}
