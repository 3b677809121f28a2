package opencode

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

func delta(sid, part, text string) *busEvent {
	return newDelta("", deltaProps{SessionID: sid, MessageID: "msg_1", PartID: part, Field: "text", Delta: text})
}

func lifecycle(sid, typ string) *busEvent {
	return &busEvent{typ: typ, session: sid, props: []byte(`{"sessionID":"` + sid + `"}`)}
}

// take is s.TakeOr, ok when it did not fail.
func take(s *subscriber, ctx context.Context, idle <-chan time.Time) ([]*busEvent, bool) {
	b, err := s.TakeOr(ctx, idle)
	return b, err == nil
}

// subStats returns s's merged deltas, longest queue and whether it was
// cut off.
func subStats(s *subscriber) (merged, maxQueued int, cut bool) {
	st := s.Stats()
	return st.Merged, st.MaxDepth, st.Lagged
}

func TestQueueCoalescesDeltasUnderPressure(t *testing.T) {
	h := newHub(4)
	sub := h.subscribe("", false, lifecycle("", "server.connected"))
	h.publish(lifecycle("ses_a", "session.status"))
	h.publish(delta("ses_a", "prt_1", "a"))
	h.publish(delta("ses_b", "prt_2", "x"))
	// Full (4): deltas join the latest delta of their part when no other
	// event of their session lies between.
	h.publish(delta("ses_a", "prt_1", "b"))
	h.publish(delta("ses_b", "prt_2", "y"))
	h.publish(delta("ses_a", "prt_1", "c"))
	// Lifecycle events are never merged or dropped.
	h.publish(lifecycle("ses_a", "session.idle"))
	// Past it, a delta of the same part cannot join (order): queued.
	h.publish(delta("ses_a", "prt_1", "d"))
	items, ok := take(sub, context.Background(), nil)
	if !ok {
		t.Fatal("take failed")
	}
	var got []string
	for _, e := range items {
		if e.delta != nil {
			got = append(got, e.delta.PartID+"="+e.delta.Delta)
		} else {
			got = append(got, e.typ)
		}
	}
	want := "server.connected session.status prt_1=abc prt_2=xy session.idle prt_1=d"
	if strings.Join(got, " ") != want {
		t.Fatalf("queue %v\nwant %s", got, want)
	}
	if m, _, cut := subStats(sub); m != 3 || cut {
		t.Fatalf("merged %d cut %v", m, cut)
	}
	// The frame of a merged delta carries the joined text.
	if f := string(items[2].appendFrame(nil, false, []byte("evt_2"))); !strings.Contains(f, `"delta":"abc"`) || !strings.HasSuffix(f, "}\n\n") {
		t.Fatalf("frame %s", f)
	}
	if f := string(items[1].appendFrame(nil, true, []byte("evt_1"))); !strings.HasPrefix(f, `data: {"directory":"","payload":{"id":"evt_1","type":"session.status"`) {
		t.Fatalf("global frame %s", f)
	}
	h.unsubscribe(sub)
}

// A published delta is shared by every subscriber: a queue that joins
// deltas into it works on its own copy, to which the later deltas are
// appended, and never changes what the other queue holds.
func TestQueueJoinsIntoItsOwnCopy(t *testing.T) {
	h := newHub(2)
	s1 := h.subscribe("", false, lifecycle("", "server.connected"))
	s2 := h.subscribe("", false, lifecycle("", "server.connected"))
	first := delta("ses_a", "prt_1", "a")
	h.publish(first) // both queues are full from here
	for _, d := range []string{"b", "c", "d"} {
		h.publish(delta("ses_a", "prt_1", d))
	}
	for _, sub := range []*subscriber{s1, s2} {
		items, ok := take(sub, context.Background(), nil)
		if !ok || len(items) != 2 || items[1].delta == nil || items[1].delta.Delta != "abcd" || items[1] == first {
			t.Fatalf("queue %+v", items)
		}
		if f := string(items[1].appendFrame(nil, false, []byte("evt_1"))); !strings.Contains(f, `"delta":"abcd"`) {
			t.Fatalf("frame %s", f)
		}
	}
	if first.delta.Delta != "a" {
		t.Fatalf("the published delta became %q", first.delta.Delta)
	}
	h.unsubscribe(s1)
	h.unsubscribe(s2)
}

func TestQueueCutsHopelessSubscriber(t *testing.T) {
	h := newHub(2)
	slow := h.subscribe("", false, lifecycle("", "server.connected"))
	fast := h.subscribe("", false, lifecycle("", "server.connected"))
	start := time.Now()
	for i := range 1000 {
		h.publish(lifecycle("ses_a", fmt.Sprintf("session.updated.%d", i)))
		if i%10 == 0 {
			take(fast, context.Background(), nil)
		}
	}
	if time.Since(start) > 2*time.Second {
		t.Fatal("publishing waited for a subscriber")
	}
	if _, ok := take(slow, context.Background(), nil); ok {
		t.Fatal("hopeless subscriber still served")
	}
	if _, _, cut := subStats(slow); !cut {
		t.Fatal("not marked cut")
	}
	if items, ok := take(fast, context.Background(), nil); !ok || len(items) == 0 {
		t.Fatal("fast subscriber lost its events")
	}
	h.close()
	if _, ok := take(fast, context.Background(), nil); ok {
		t.Fatal("closed hub still serves")
	}
}

// A subscriber that reads nothing never holds a run back.
func TestStalledSubscriberDoesNotStallRuns(t *testing.T) {
	noLeaks(t)
	p := newPool(t, nestedManifest(t))
	s, base := newServer(t, p, Options{QueueSize: 8})
	stalled := s.hub.subscribe("", false, lifecycle("", "server.connected"))
	defer s.hub.unsubscribe(stalled)
	sid := str(createSession(t, base, "")["id"])
	done := make(chan struct{})
	go func() {
		defer close(done)
		call(t, "POST", base+"/session/"+sid+"/message", promptBody("go"))
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("run stalled behind a subscriber that reads nothing")
	}
	if _, _, cut := subStats(stalled); !cut {
		t.Fatal("a subscriber 16×QueueSize behind should have been cut off")
	}
}

// TestDeltaFrameIsJSONMarshal: the hand-written encoding of a delta's
// properties is byte for byte json.Marshal's, escapes included.
func TestDeltaFrameIsJSONMarshal(t *testing.T) {
	for _, d := range []deltaProps{
		{},
		{SessionID: "ses_1", MessageID: "msg_2", PartID: "prt_3", Field: "text", Delta: "hello"},
		{SessionID: `"q"`, MessageID: "<a&b>", PartID: "\u2028", Field: "\\", Delta: "line\nnext\t\x00\xff é 🙂"},
	} {
		want, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		if got := d.appendJSON([]byte("x")); string(got) != "x"+string(want) {
			t.Errorf("appendJSON(%+v) = %s, want x%s", d, got, want)
		}
	}
}
