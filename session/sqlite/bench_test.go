package sqlite_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/session/sqlite"
)

// benchEvents is a realistic mix: mostly text deltas, some tool and
// lifecycle events, a few wrapped.
func benchEvents() []event.Event {
	return []event.Event{
		event.PartStart{Index: 0, Part: event.Part{PartKind: event.PartText}},
		event.PartDelta{Index: 0, Delta: event.Delta{PartDeltaKind: event.PartText, ContentDelta: "Hello "}},
		event.PartDelta{Index: 0, Delta: event.Delta{PartDeltaKind: event.PartText, ContentDelta: "world, "}},
		event.PartDelta{Index: 0, Delta: event.Delta{PartDeltaKind: event.PartText, ContentDelta: "this is "}},
		event.PartDelta{Index: 0, Delta: event.Delta{PartDeltaKind: event.PartText, ContentDelta: "a benchmark. "}},
		event.PartEnd{Index: 0},
		event.ToolCallStart{ToolCallID: "cal_0123456789abcdefghijklmnop", ToolName: "task", Title: "task research", ToolKind: "other", RawInput: []byte(`{"agent_or_team":"research","prompt":"find things"}`)},
		event.Subagent{SourceName: "researcher", SourceType: event.SourceAgent, Depth: 1, ChildSessionID: "ses_child", ParentSessionID: "ses_bench",
			Path: []string{"ses_child"}, Event: event.PartDelta{Index: 0, Delta: event.Delta{PartDeltaKind: event.PartText, ContentDelta: "child text "}}},
		event.ToolCallComplete{ToolCallID: "cal_0123456789abcdefghijklmnop", ToolName: "task", ToolInput: []byte(`{"agent_or_team":"research"}`), ToolResult: "done", AgentName: "orchestrator"},
		event.PartDelta{Index: 1, Delta: event.Delta{PartDeltaKind: event.PartText, ContentDelta: "more text "}},
	}
}

// BenchmarkAppendEvents measures persisted events per second: events are
// appended one by one, as the pool's recorder does, and the time includes
// the final Flush that commits them.
func BenchmarkAppendEvents(b *testing.B) {
	for _, sessions := range []int{1, 8} {
		b.Run(fmt.Sprintf("sessions=%d", sessions), func(b *testing.B) {
			st, err := sqlite.Open(filepath.Join(b.TempDir(), "bench.db"), sqlite.Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			ctx := context.Background()
			ids := make([]string, sessions)
			for i := range ids {
				ids[i] = fmt.Sprintf("ses_bench%d", i)
				if err := st.CreateSession(ctx, session.Session{ID: ids[i], AgentName: "bench", Status: session.StatusRunning}); err != nil {
					b.Fatal(err)
				}
			}
			evs := benchEvents()
			b.ReportAllocs()
			b.ResetTimer()
			start := time.Now()
			for i := 0; i < b.N; i++ {
				if err := st.AppendEvents(ctx, ids[i%sessions], evs[i%len(evs)]); err != nil {
					b.Fatal(err)
				}
			}
			if err := st.Flush(ctx); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "events/s")
		})
	}
}

// BenchmarkSyncWrites measures the writes a caller waits for, one after
// another (an idle writer): a create, an update, and a claim with its
// release: what a delegated call pays per session.
func BenchmarkSyncWrites(b *testing.B) {
	st, err := sqlite.Open(filepath.Join(b.TempDir(), "bench.db"), sqlite.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	n := 0
	b.Run("create", func(b *testing.B) {
		for b.Loop() {
			n++
			if err := st.CreateSession(ctx, session.Session{ID: fmt.Sprintf("ses_%d", n), AgentName: "bench", Status: session.StatusRunning}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("update", func(b *testing.B) {
		for b.Loop() {
			if err := st.UpdateSession(ctx, "ses_1", func(s *session.Session) { s.Cost++ }); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("claim+release", func(b *testing.B) {
		for b.Loop() {
			if err := st.Claim(ctx, "ses_1"); err != nil {
				b.Fatal(err)
			}
			if err := st.Release(ctx, "ses_1"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("get", func(b *testing.B) {
		for b.Loop() {
			if _, err := st.GetSession(ctx, "ses_1"); err != nil {
				b.Fatal(err)
			}
		}
	})
}
