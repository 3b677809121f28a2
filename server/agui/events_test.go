package agui

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
		if got := appendString(nil, s); !bytes.Equal(got, want) {
			t.Errorf("appendString(%q) = %s, want %s", s, got, want)
		}
		if got := appendString([]byte("prefix:"), s); !bytes.Equal(got, append([]byte("prefix:"), want...)) {
			t.Errorf("appendString(prefix, %q) = %s, want prefix:%s", s, got, want)
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
		if got := appendString(nil, s); !bytes.Equal(got, want) {
			t.Fatalf("appendString(%q) = %s, want %s", s, got, want)
		}
	})
}

// TestAppendSSEAllocs: encoding a text delta into a buffer with room
// allocates nothing.
func TestAppendSSEAllocs(t *testing.T) {
	e := &Event{
		Type: TypeTextMessageContent, Timestamp: 1764460800000, SubagentRunID: "ses_7f3a9c0e21ffe6QmZ0bW1NKD3f9a",
		MessageID: "msg_0c5f63d8e001Hq7cW8l2aTQp0D", Delta: "token <b>\n\u2028\xff",
	}
	buf := e.AppendSSE(nil)
	if n := testing.AllocsPerRun(100, func() { buf = e.AppendSSE(buf[:0]) }); n != 0 {
		t.Fatalf("AppendSSE: %v allocs per event, want 0", n)
	}
	want := `data: {"type":"TEXT_MESSAGE_CONTENT","timestamp":1764460800000,"subagentRunId":"ses_7f3a9c0e21ffe6QmZ0bW1NKD3f9a",` +
		`"messageId":"msg_0c5f63d8e001Hq7cW8l2aTQp0D","delta":"token \u003cb\u003e\n\u2028\ufffd"}` + "\n\n"
	if string(buf) != want {
		t.Fatalf("AppendSSE =\n%s\nwant\n%s", buf, want)
	}
}

// TestEventJSONMatchesMarshal: every string field of every event type is
// encoded as json.Marshal encodes it (the decoded event carries the field
// back unchanged, modulo the U+FFFD replacement).
func TestEventJSONMatchesMarshal(t *testing.T) {
	for _, s := range jsonStringCases {
		e := &Event{Type: TypeToolCallResult, SubagentRunID: s, MessageID: s, ToolCallID: s, Content: s, Role: s}
		got := e.AppendJSON(nil)
		if !json.Valid(got) {
			t.Fatalf("invalid JSON for %q: %s", s, got)
		}
		v := marshalString(t, s)
		if !bytes.Contains(got, append([]byte(`"content":`), v...)) {
			t.Fatalf("content %q not encoded as %s: %s", s, v, got)
		}
	}
}
