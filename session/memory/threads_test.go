package memory

import (
	"context"
	"fmt"
	"testing"

	"github.com/agentpool/agentpool/session"
)

// TestAGUIThreadGrowthMemoryIndex: the memory store answers
// ListOptions.Thread from its index of threads (issue 31: finding a
// thread read every session), which follows creates, updates, deletes and
// the retention's evictions and so never holds a session the store no
// longer has.
func TestAGUIThreadGrowthMemoryIndex(t *testing.T) {
	ctx := context.Background()
	st := New(WithMaxRoots(100))
	for i := range 300 {
		s := session.Session{ID: fmt.Sprintf("ses_%03d", i), Status: session.StatusCompleted,
			Metadata: map[string]any{session.MetaThread: fmt.Sprint("t-", i%150)}}
		if err := st.CreateSession(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	// Evicted: the first 200 roots; threads t-50 .. t-149 have one session left.
	if n := len(st.threads); n != 100 {
		t.Errorf("the index holds %d threads after evictions, want 100", n)
	}
	if got := st.threads["t-60"]; len(got) != 1 || got[0].s.ID != "ses_210" {
		t.Errorf("thread t-60 indexes %v, want ses_210 only", got)
	}
	found, err := st.ListSessions(ctx, session.ListOptions{Thread: "t-60", RootsOnly: true})
	if err != nil || len(found) != 1 || found[0].ID != "ses_210" {
		t.Errorf("ListSessions(t-60) = %v, %v", found, err)
	}
	if err := st.UpdateSession(ctx, "ses_210", func(s *session.Session) { s.Metadata = nil }); err != nil {
		t.Fatal(err)
	}
	if err := st.DeleteSession(ctx, "ses_211"); err != nil {
		t.Fatal(err)
	}
	if _, ok := st.threads["t-60"]; ok {
		t.Error("thread t-60 still indexed after its session left it")
	}
	if _, ok := st.threads["t-61"]; ok {
		t.Error("thread t-61 still indexed after its session was deleted")
	}
}
