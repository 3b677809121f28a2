package wire

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

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
	// The escaper itself is checked against json.Marshal in
	// internal/jsonstr; these reach each field through it.
	cases := []string{"", "token ", `a"b\c`, "<script>&", "line\nbreak\t\x00", "\u2028\u2029", "\xff\xc3(", "日本語 😀", strings.Repeat("x<", 40)}
	for _, s := range cases {
		e := &Event{Type: TypeToolCallResult, SubagentRunID: s, MessageID: s, ToolCallID: s, Content: s, Role: s}
		got := e.AppendJSON(nil)
		if !json.Valid(got) {
			t.Fatalf("invalid JSON for %q: %s", s, got)
		}
		v, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(got, append([]byte(`"content":`), v...)) {
			t.Fatalf("content %q not encoded as %s: %s", s, v, got)
		}
	}
}

// TestActivityAppendPatch: an ACTIVITY_DELTA with AppendPath carries the
// one JSON Patch op that appends its Delta, as json.Marshal encodes it.
func TestActivityAppendPatch(t *testing.T) {
	for _, s := range []string{"", "token ", `a"b\c`, "line\nbreak\u2028", "日本語 😀"} {
		e := &Event{Type: TypeActivityDelta, MessageID: "msg_1", ActivityType: "subagent", AppendPath: "/messages/0/content/-", Delta: s}
		var got struct {
			Patch []map[string]string `json:"patch"`
		}
		b := e.AppendJSON(nil)
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		want := []map[string]string{{"op": "add", "path": "/messages/0/content/-", "value": s}}
		if len(got.Patch) != 1 || got.Patch[0]["op"] != "add" || got.Patch[0]["path"] != want[0]["path"] || got.Patch[0]["value"] != s {
			t.Fatalf("patch of %q: %s", s, b)
		}
	}
}
