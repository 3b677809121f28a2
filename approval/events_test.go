package approval_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentpool/agentpool/approval"
	"github.com/agentpool/agentpool/event"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// The stored events are wire formats: golden, and read back as written.
func TestEventsGolden(t *testing.T) {
	req := approval.Request{ID: "per_1", SessionID: "ses_child", Agent: "writer", Tool: "Write", CallID: "cal_1",
		Input: json.RawMessage(`{"file_path":"hello.md","content":"hello\n"}`), Title: "Write hello.md",
		Rule: "the tool_approval policy of agent writer asks before Write", Created: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)}
	ans := approval.Answer{Reply: approval.RejectOnce, Message: "not that file", By: "opencode"}
	for name, e := range map[string]event.Event{
		"approval_requested": approval.RequestedEvent(req),
		"approval_replied":   approval.RepliedEvent("per_1", ans),
	} {
		raw, err := event.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		var pretty bytes.Buffer
		if err := json.Indent(&pretty, raw, "", "  "); err != nil {
			t.Fatal(err)
		}
		pretty.WriteByte('\n')
		path := filepath.Join("testdata", name+".golden")
		if *update {
			if err := os.WriteFile(path, pretty.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (go test ./approval -update)", err)
		}
		if !bytes.Equal(pretty.Bytes(), want) {
			t.Errorf("%s drifted:\n got %s\nwant %s", name, pretty.Bytes(), want)
		}
		back, err := event.Decode(raw)
		if err != nil {
			t.Fatal(err)
		}
		if got, ok, err := approval.ParseRequested(back); ok {
			if err != nil || got.ID != req.ID || got.Title != req.Title || !got.Created.Equal(req.Created) || !jsonEqual(got.Input, req.Input) {
				t.Errorf("read back %+v, %v", got, err)
			}
		}
		if got, ok, err := approval.ParseReplied(back); ok {
			if err != nil || got.RequestID != "per_1" || got.Answer != ans {
				t.Errorf("read back %+v, %v", got, err)
			}
		}
	}
	// Not a request: a clear error, not a request without an id.
	if _, ok, err := approval.ParseRequested(event.Custom{EventType: approval.EventRequested, EventData: map[string]any{"tool": "Write"}}); !ok || err == nil {
		t.Errorf("a request without an id: ok %v, err %v", ok, err)
	}
	if _, ok, err := approval.ParseReplied(event.Custom{EventType: approval.EventReplied, EventData: map[string]any{"request_id": "per_1", "reply": "maybe"}}); !ok || err == nil {
		t.Errorf("an unknown reply: ok %v, err %v", ok, err)
	}
	if _, ok, _ := approval.ParseRequested(event.Custom{EventType: "hook_run"}); ok {
		t.Error("another custom event read as a request")
	}
}

func jsonEqual(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return bytes.Equal(xa, ya)
}

// A stored request asked again keeps its id, and a broker asks it once.
func TestAskKeepsAStoredID(t *testing.T) {
	b := newBroker(t, approval.Options{})
	asked := make(chan approval.Request, 1)
	defer b.Attach("test", func(n approval.Notice) {
		if n.Kind == approval.Asked {
			asked <- n.Request
		}
	})()
	created := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	done := make(chan approval.Answer, 1)
	go func() {
		a, _ := b.Ask(context.Background(), approval.Request{ID: "per_stored", SessionID: "ses_1", Agent: "a", Tool: "Write", Created: created})
		done <- a
	}()
	req := <-asked
	if req.ID != "per_stored" || !req.Created.Equal(created) {
		t.Fatalf("asked %+v", req)
	}
	if _, err := b.Ask(context.Background(), approval.Request{ID: "per_stored", SessionID: "ses_1", Agent: "a", Tool: "Write"}); err == nil {
		t.Error("the same stored request was asked twice")
	}
	if err := b.Reply("per_stored", approval.AllowOnce, "", "test"); err != nil {
		t.Fatal(err)
	}
	if a := <-done; a.Reply != approval.AllowOnce {
		t.Errorf("answer %+v", a)
	}
	if _, err := b.Ask(context.Background(), approval.Request{ID: "per_stored", SessionID: "ses_1", Agent: "a", Tool: "Write"}); err == nil || errors.Is(err, context.Canceled) {
		t.Errorf("an answered stored request asked again: %v", err)
	}
}
