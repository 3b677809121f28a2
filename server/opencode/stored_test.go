package opencode

import (
	"context"
	"testing"
	"time"

	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/id"
	"github.com/agentpool/agentpool/model"
	"github.com/agentpool/agentpool/pool"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/session/memory"
)

// TestStoredEnd: a run read back from the store (another process's, or
// this one's before a restart) says how it ended: the session's metadata
// carries the record's status, error and duration, and its last
// assistant message the error (aborted: MessageAbortedError; failed:
// UnknownError with the record's error), as the TUI and the web view
// read them.
func TestStoredEnd(t *testing.T) {
	noLeaks(t)
	m, err := config.Parse("test.yaml", []byte("agents:\n  solo:\n    model: {type: test}\n"))
	if err != nil {
		t.Fatal(err)
	}
	store := memory.New()
	ctx := context.Background()
	now := time.Now()
	mk := func(status session.Status, stop event.StopReason, msg string) string {
		sid := id.DescendingAt(id.Session, now)
		rec := session.Session{ID: sid, AgentName: "solo", Status: status, StopReason: stop, CreatedAt: now, UpdatedAt: now, DurationMS: 1234}
		if msg != "" {
			rec.Metadata = map[string]any{"error": msg}
		}
		if err := store.CreateSession(ctx, rec); err != nil {
			t.Fatal(err)
		}
		if err := store.AppendMessages(ctx, sid,
			session.Message{ID: id.AscendingAt(id.Message, now), SessionID: sid, CreatedAt: now, Message: model.UserText("go")},
			session.Message{ID: id.AscendingAt(id.Message, now), SessionID: sid, AgentName: "solo", CreatedAt: now,
				Message: model.Message{Role: model.RoleAssistant, Parts: []model.Part{{Kind: model.PartThinking, Text: "hm"}, {Kind: model.PartText, Text: "so far"}}}},
		); err != nil {
			t.Fatal(err)
		}
		if err := store.AppendEvents(ctx, sid, event.RunStarted{SessionID: sid, AgentName: "solo"},
			event.PartStart{Index: 0, Part: event.Part{PartKind: event.PartThinking}}, event.PartEnd{Index: 0},
			event.PartStart{Index: 1, Part: event.Part{PartKind: event.PartText}}, event.PartEnd{Index: 1}); err != nil {
			t.Fatal(err)
		}
		return sid
	}
	aborted := mk(session.StatusAborted, event.StopAborted, "")
	failed := mk(session.StatusError, event.StopError, "upstream failed")
	done := mk(session.StatusCompleted, event.StopCompleted, "")
	p, err := pool.New(m, pool.Options{Store: store})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	_, base := newServer(t, p, Options{})
	for sid, want := range map[string][3]string{
		aborted: {"aborted", "MessageAbortedError", "aborted"},
		failed:  {"error", "UnknownError", "upstream failed"},
		done:    {"completed", "", ""},
	} {
		info := mustCall(t, 200, "GET", base+"/session/"+sid, "")
		mustMatchResponse(t, "get", "/session/{sessionID}", "200", info)
		if get(info, "metadata", "agentpool", "status") != want[0] || get(info, "metadata", "agentpool", "durationMs") != 1234.0 {
			t.Errorf("%s: metadata %v", want[0], get(info, "metadata"))
		}
		msgs := arr(mustCall(t, 200, "GET", base+"/session/"+sid+"/message", ""))
		last := get(msgs[len(msgs)-1], "info")
		if want[1] == "" {
			if get(last, "error") != nil {
				t.Errorf("a completed run's answer has an error: %v", get(last, "error"))
			}
			continue
		}
		if get(last, "error", "name") != want[1] || get(last, "error", "data", "message") != want[2] {
			t.Errorf("%s: last answer's error %v", want[0], get(last, "error"))
		}
	}
	// The list answers the same metadata.
	for _, s := range arr(mustCall(t, 200, "GET", base+"/session", "")) {
		if get(s, "metadata", "agentpool", "status") == nil {
			t.Errorf("GET /session without the stored status: %v", s)
		}
	}
}
