package acp

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/agentpool/agentpool/internal/queue"
)

func chunk(sid, text string) outItem {
	return outItem{sid: sid, update: chunkUpdate{SessionUpdate: updateAgentMessageChunk, Content: textBlock(text)}}
}

func thought(sid, text string) outItem {
	return outItem{sid: sid, update: chunkUpdate{SessionUpdate: updateAgentThoughtChunk, Content: textBlock(text)}}
}

func progress(sid, call, text string) outItem {
	return outItem{sid: sid, update: toolCallUpdate{SessionUpdate: updateToolCallUpdate, ToolCallID: call, Content: []toolCallContent{textContent(text)}}}
}

// outQueue is the queued messages of one queue, for the merge rules.
type outQueue struct{ items []outItem }

func (q *outQueue) merge(it outItem) bool {
	return queue.Merge(q.items, it, mergeOut, queue.DefaultScan)
}

func lifecycleItem(sid string) outItem { return outItem{sid: sid, raw: []byte("{}\n")} }

func answerItem() outItem { return outItem{raw: []byte("{}\n")} }

// The merge rules: a chunk joins the latest queued item of its session if
// that is a chunk of the same kind; it may pass items of other sessions,
// never a response or one of its own session's other updates.
func TestOutboxMerge(t *testing.T) {
	for _, tc := range []struct {
		name   string
		queued []outItem
		it     outItem
		merged bool
		text   string // the merged item's text
	}{
		{"same session and kind", []outItem{chunk("a", "x")}, chunk("a", "y"), true, "xy"},
		{"past another session", []outItem{chunk("a", "x"), chunk("b", "z"), lifecycleItem("b")}, chunk("a", "y"), true, "xy"},
		{"not past its own lifecycle", []outItem{chunk("a", "x"), lifecycleItem("a")}, chunk("a", "y"), false, ""},
		{"not past a response", []outItem{chunk("a", "x"), answerItem()}, chunk("a", "y"), false, ""},
		{"not into another kind", []outItem{thought("a", "x")}, chunk("a", "y"), false, ""},
		{"no chunk of its session", []outItem{chunk("b", "x")}, chunk("a", "y"), false, ""},
		{"lifecycle never merges", []outItem{lifecycleItem("a")}, lifecycleItem("a"), false, ""},
		{"too big", []outItem{chunk("a", strings.Repeat("x", maxMergedChunk))}, chunk("a", "y"), false, ""},
	} {
		q := &outQueue{items: tc.queued}
		if got := q.merge(tc.it); got != tc.merged {
			t.Errorf("%s: merged %v, want %v", tc.name, got, tc.merged)
			continue
		}
		if tc.merged && q.items[0].update.(chunkUpdate).Content.Text != tc.text {
			t.Errorf("%s: text %q, want %q", tc.name, q.items[0].update.(chunkUpdate).Content.Text, tc.text)
		}
		if len(q.items) != len(tc.queued) {
			t.Errorf("%s: the queue changed length", tc.name)
		}
	}
	// A spawn's progress replaces the queued progress of the same call.
	q := &outQueue{items: []outItem{progress("r", "spawn:1", "old"), progress("r", "spawn:2", "other")}}
	if q.merge(progress("r", "spawn:1", "new")) {
		t.Error("progress merged past the progress of another call")
	}
	if !q.merge(progress("r", "spawn:2", "newer")) || q.items[1].update.(toolCallUpdate).Content[0].Content.Text != "newer" {
		t.Errorf("progress not replaced: %+v", q.items[1].update)
	}
}

// blockingWriter blocks every write until release is closed, then fails.
type blockingWriter struct{ release chan struct{} }

func (w blockingWriter) Write(p []byte) (int, error) {
	<-w.release
	return 0, errors.New("client gone")
}

// A full queue holds its producer; a write failure releases it (and every
// later send fails at once), and reports the failure.
func TestOutboxFullThenFailure(t *testing.T) {
	// In a bubble: synctest.Wait returns once the writer and the waiting
	// sender are blocked, the notice these steps wait for.
	synctest.Test(t, outboxFullThenFailure)
}

func outboxFullThenFailure(t *testing.T) {
	w := blockingWriter{release: make(chan struct{})}
	failed := make(chan error, 1)
	o := newOutbox(w, 2, func(err error) { failed <- err })
	// The writer takes the first message and blocks on it; a tool call
	// and a chunk fill the queue.
	if err := o.send("s", map[string]int{"n": 0}); err != nil {
		t.Fatal(err)
	}
	synctest.Wait() // the writer took it and blocks in Write
	if n := o.queue("s").Len(); n != 0 {
		t.Fatalf("the writer did not take the first message: %d queued", n)
	}
	if err := o.update("s", "s", toolCallUpdate{SessionUpdate: updateToolCall, ToolCallID: "c", Title: "t", Status: statusInProgress}); err != nil {
		t.Fatal(err)
	}
	for _, text := range []string{"a", "b"} {
		// The second chunk merges into the first in the full queue,
		// without waiting.
		if err := o.update("s", "s", chunkUpdate{SessionUpdate: updateAgentMessageChunk, Content: textBlock(text)}); err != nil {
			t.Fatal(err)
		}
	}
	if merged, most := o.stats(); merged != 1 || most != 2 {
		t.Errorf("merged %d, longest queue %d; want 1, 2", merged, most)
	}
	// Another session's queue does not wait for this one.
	if err := o.update("other", "other", chunkUpdate{SessionUpdate: updateAgentMessageChunk, Content: textBlock("b")}); err != nil {
		t.Fatal(err)
	}
	// A lifecycle message waits for room.
	waited := make(chan error, 1)
	go func() { waited <- o.send("s", map[string]string{"lifecycle": "x"}) }()
	synctest.Wait() // the sender blocks
	if o.queue("s").Stats().Waited == 0 {
		t.Fatal("the lifecycle message did not wait for space")
	}
	select {
	case err := <-waited:
		t.Fatalf("a send to a full queue returned: %v", err)
	default:
	}
	if n := o.queue("other").Len(); n != 1 {
		t.Errorf("the other session's queue holds %d messages, want 1", n)
	}
	close(w.release)
	if err := <-waited; err == nil || !strings.Contains(err.Error(), "client gone") {
		t.Errorf("the waiting send after the failure: %v", err)
	}
	if err := <-failed; err == nil {
		t.Error("no failure reported")
	}
	if err := o.send("s", 1); err == nil {
		t.Error("a send after the failure succeeded")
	}
	o.close()
	o.wait()
}

// The writer encodes a chunk or a progress update in place, byte for byte
// as json.Marshal encodes the notification (as send and update do for the
// other messages), one line each.
func TestItemEncoderMatchesMarshal(t *testing.T) {
	texts := []string{"", "token ", `"q" \b`, "<a>&amp;", "line\nbreak\r\t\x00\x1f\x7f", "\u2028\u2029", "\xff\xfe bad", "日本語 😀"}
	want := func(sid string, update any) string {
		b, err := json.Marshal(outRequest{JSONRPC: "2.0", Method: methodSessionUpdate, Params: sessionNotification{SessionID: sid, Update: update}})
		if err != nil {
			t.Fatal(err)
		}
		return string(b) + "\n"
	}
	e := newItemEncoder()
	for _, s := range texts {
		sid := "ses_" + s
		items := []outItem{
			chunk(sid, s),
			thought(sid, s),
			{sid: sid, update: chunkUpdate{SessionUpdate: updateAgentMessageChunk, Content: contentBlock{Type: "text", Text: s, Name: s, MimeType: s}}},
			progress(sid, "spawn:"+s, s),
			{sid: sid, update: toolCallUpdate{SessionUpdate: updateToolCallUpdate, ToolCallID: s, Content: []toolCallContent{textContent(s), textContent("")}}},
			{sid: sid, update: toolCallUpdate{ToolCallID: s}},
		}
		var all strings.Builder
		e.reset()
		for i := range items {
			it := &items[i]
			w := want(sid, it.update)
			all.WriteString(w)
			before := e.buf.Len()
			e.add(it)
			if got := e.buf.String()[before:]; got != w {
				t.Errorf("item %d of %q:\n got %s\nwant %s", i, s, got, w)
			}
		}
		e.add(&outItem{raw: []byte("{\"raw\":1}\n")})
		all.WriteString("{\"raw\":1}\n")
		if e.buf.String() != all.String() {
			t.Errorf("batch of %q:\n got %s\nwant %s", s, e.buf.String(), all.String())
		}
	}
}
