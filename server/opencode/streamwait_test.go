package opencode

import "testing"

// A prompt waits for an event stream only while none that gets its
// session's events is open: the TUI's /global/event stream counts, so
// that its prompts run at once (they waited the whole 300 ms, issue 37).
func TestStreamForCountsGlobalStreams(t *testing.T) {
	h := newHub(4)
	if ok, _ := h.streamFor("/work"); ok {
		t.Fatal("a stream without any subscriber")
	}
	other := h.subscribe("/elsewhere", false, lifecycle("", "server.connected"))
	if ok, _ := h.streamFor("/work"); ok {
		t.Fatal("an /event stream of another directory counted")
	}
	global := h.subscribe("", true, lifecycle("", "server.connected"))
	if ok, _ := h.streamFor("/work"); !ok {
		t.Fatal("the /global/event stream (the TUI's) not counted")
	}
	h.unsubscribe(global)
	own := h.subscribe("/work", false, lifecycle("", "server.connected"))
	if ok, _ := h.streamFor("/work"); !ok {
		t.Fatal("the directory's /event stream not counted")
	}
	h.unsubscribe(own)
	h.unsubscribe(other)
}
