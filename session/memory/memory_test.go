package memory_test

import (
	"context"
	"testing"

	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/session/memory"
	"github.com/agentpool/agentpool/session/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, storetest.Capabilities{MaxRoots: memory.DefaultMaxRoots}, func(*testing.T) session.Store { return memory.New() })
}

func TestConformanceUnbounded(t *testing.T) {
	storetest.Run(t, storetest.Capabilities{}, func(*testing.T) session.Store { return memory.New(memory.WithMaxRoots(0)) })
}

// The suite's roots are all running: a store bounded to one root must keep
// every one of them.
func TestConformanceOneRootAllRunning(t *testing.T) {
	storetest.Run(t, storetest.Capabilities{MaxRoots: 1}, func(*testing.T) session.Store { return memory.New(memory.WithMaxRoots(1)) })
}

// fn works on the stored record: a panic in it leaves the record as it
// was, and a map it keeps afterwards is not the store's.
func TestUpdateSessionPanicAndKeptMap(t *testing.T) {
	ctx := context.Background()
	st := memory.New()
	if err := st.CreateSession(ctx, session.Session{ID: "s", Title: "before", Status: session.StatusRunning, Metadata: map[string]any{"k": "v"}}); err != nil {
		t.Fatal(err)
	}
	func() {
		defer func() { _ = recover() }()
		_ = st.UpdateSession(ctx, "s", func(s *session.Session) {
			s.Title = "half"
			s.Metadata["k"] = "changed"
			panic("boom")
		})
	}()
	got, err := st.GetSession(ctx, "s")
	if err != nil || got.Title != "before" || got.Metadata["k"] != "v" {
		t.Fatalf("after a panicking update: %+v (%v)", got, err)
	}
	mine := map[string]any{"a": 1}
	if err := st.UpdateSession(ctx, "s", func(s *session.Session) { s.Metadata = mine; s.Title = "after" }); err != nil {
		t.Fatal(err)
	}
	mine["a"] = 2
	got, _ = st.GetSession(ctx, "s")
	if got.Title != "after" || got.Metadata["a"] != 1 {
		t.Fatalf("the store shares the caller's map: %+v", got)
	}
}

// The content of captures is held once, and let go with the last session
// that holds it, deleted or dropped by retention.
func TestCaptureContentsAreShared(t *testing.T) {
	ctx := context.Background()
	st := memory.New(memory.WithMaxRoots(2))
	defer st.Close()
	put := func(sid, content string) {
		t.Helper()
		if err := st.CreateSession(ctx, session.Session{ID: sid, Status: session.StatusCompleted}); err != nil {
			t.Fatal(err)
		}
		c := session.Capture{SessionID: sid, MessageID: "m", Root: "/ws", Path: "f", Exists: true, Content: []byte(content)}
		if _, err := st.PutCapture(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	put("ses_1", "same")
	put("ses_2", "same")
	if n := memory.BlobCount(st); n != 1 {
		t.Fatalf("%d contents held for one content in two sessions", n)
	}
	if err := st.DeleteSession(ctx, "ses_1"); err != nil {
		t.Fatal(err)
	}
	if n := memory.BlobCount(st); n != 1 {
		t.Fatalf("%d contents held after one of two sessions was deleted, want 1", n)
	}
	put("ses_3", "other") // two roots kept
	put("ses_4", "more")  // ses_2, the oldest finished root, dropped
	if n := memory.BlobCount(st); n != 2 {
		t.Fatalf("%d contents held after retention dropped ses_2, want 2", n)
	}
}
