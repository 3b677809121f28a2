package acp

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func chunk(sid, text string) outItem {
	return outItem{sid: sid, chunk: &ChunkUpdate{SessionUpdate: UpdateAgentMessageChunk, Content: textBlock(text)}}
}

func thought(sid, text string) outItem {
	return outItem{sid: sid, chunk: &ChunkUpdate{SessionUpdate: UpdateAgentThoughtChunk, Content: textBlock(text)}}
}

func progress(sid, call, text string) outItem {
	return outItem{sid: sid, progress: &ToolCallUpdate{SessionUpdate: UpdateToolCallUpdate, ToolCallID: call, Content: []ToolCallContent{textContent(text)}}}
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
		if tc.merged && q.items[0].chunk.Content.Text != tc.text {
			t.Errorf("%s: text %q, want %q", tc.name, q.items[0].chunk.Content.Text, tc.text)
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
	if !q.merge(progress("r", "spawn:2", "newer")) || q.items[1].progress.Content[0].Content.Text != "newer" {
		t.Errorf("progress not replaced: %+v", q.items[1].progress)
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
	w := blockingWriter{release: make(chan struct{})}
	failed := make(chan error, 1)
	o := newOutbox(w, 2, func(err error) { failed <- err })
	// The writer takes the first message and blocks on it; a tool call
	// and a chunk fill the queue.
	if err := o.send("s", map[string]int{"n": 0}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, o, func() bool { return len(o.ready) == 0 }) // taken by the writer
	if err := o.update("s", "s", ToolCallUpdate{SessionUpdate: UpdateToolCall, ToolCallID: "c", Title: "t", Status: StatusInProgress}); err != nil {
		t.Fatal(err)
	}
	for _, text := range []string{"a", "b"} {
		// The second chunk merges into the first in the full queue,
		// without waiting.
		if err := o.update("s", "s", ChunkUpdate{SessionUpdate: UpdateAgentMessageChunk, Content: textBlock(text)}); err != nil {
			t.Fatal(err)
		}
	}
	if merged, most := o.stats(); merged != 1 || most != 2 {
		t.Errorf("merged %d, longest queue %d; want 1, 2", merged, most)
	}
	// Another session's queue does not wait for this one.
	if err := o.update("other", "other", ChunkUpdate{SessionUpdate: UpdateAgentMessageChunk, Content: textBlock("b")}); err != nil {
		t.Fatal(err)
	}
	// A lifecycle message waits for room.
	waited := make(chan error, 1)
	go func() { waited <- o.send("s", map[string]string{"lifecycle": "x"}) }()
	waitFor(t, o, func() bool { return o.queues["s"].space != nil }) // it waits for space
	select {
	case err := <-waited:
		t.Fatalf("a send to a full queue returned: %v", err)
	default:
	}
	o.mu.Lock()
	n := len(o.queues["other"].items)
	o.mu.Unlock()
	if n != 1 {
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

// waitFor polls cond, under the outbox's lock, until it holds.
func waitFor(t *testing.T, o *outbox, cond func() bool) {
	t.Helper()
	for range 10000 {
		o.mu.Lock()
		ok := cond()
		o.mu.Unlock()
		if ok {
			return
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatal("condition never held")
}
