package record_test

import (
	"context"
	"testing"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/record"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/session/memory"
	"github.com/agentpool/agentpool/sessiontree"
)

// benchStream is one delegated call as the pool records it: a root that
// calls a task tool, a child that answers, the root's final answer (20
// events). start and end are the indexes of the child's spawn events.
func benchStream() (evs []event.Event, start, end int) {
	const root, child = "ses_broot", "ses_bchild"
	w := func(e event.Event) event.Event {
		return event.Subagent{SourceName: "worker", SourceType: event.SourceAgent, Depth: 1, ChildSessionID: child,
			ParentSessionID: root, ToolCallID: "cal_1", Path: []string{child}, Event: e}
	}
	evs = []event.Event{
		event.RunStarted{SessionID: root, RunID: "run_1", AgentName: "boss"},
		event.PartStart{Index: 0, Part: event.Part{PartKind: event.PartToolCall, ToolCallID: "cal_1", ToolName: "ask_worker"}},
		event.PartDelta{Index: 0, Delta: event.Delta{PartDeltaKind: event.PartToolCall, ArgsDelta: `{"prompt":"do it"}`}},
		event.PartEnd{Index: 0},
		event.ToolCallStart{ToolCallID: "cal_1", ToolName: "ask_worker", Title: "ask_worker", RawInput: []byte(`{"prompt":"do it"}`)},
		event.ToolCallProgress{ToolCallID: "cal_1", Status: event.StatusInProgress, Title: "asking the worker"},
		event.SpawnSessionStart{ChildSessionID: child, ParentSessionID: root, ToolCallID: "cal_1", SpawnMechanism: event.MechanismTask,
			RunMode: event.RunModeSync, SourceName: "worker", SourceType: event.SourceAgent, Depth: 1, Description: "job",
			Metadata: map[string]any{"prompt": "do it"}},
		w(event.RunStarted{SessionID: child, RunID: "run_2", AgentName: "worker", ParentSessionID: root}),
		w(event.PartStart{Index: 0, Part: event.Part{PartKind: event.PartText}}),
		w(event.PartDelta{Index: 0, Delta: event.Delta{PartDeltaKind: event.PartText, ContentDelta: "wor"}}),
		w(event.PartDelta{Index: 0, Delta: event.Delta{PartDeltaKind: event.PartText, ContentDelta: "ked"}}),
		w(event.PartEnd{Index: 0}),
		w(event.StreamComplete{Message: event.Message{Role: "assistant", Content: "worked", FinishReason: "stop"}}),
		event.SpawnSessionEnd{ChildSessionID: child, ParentSessionID: root, ToolCallID: "cal_1", SourceName: "worker",
			SourceType: event.SourceAgent, Depth: 1, StopReason: event.StopCompleted, LastAssistantMessage: "worked", DurationMS: 1},
		event.ToolCallComplete{ToolCallID: "cal_1", ToolName: "ask_worker", ToolResult: "worked"},
		event.PartStart{Index: 0, Part: event.Part{PartKind: event.PartText}},
		event.PartDelta{Index: 0, Delta: event.Delta{PartDeltaKind: event.PartText, ContentDelta: "fin"}},
		event.PartDelta{Index: 0, Delta: event.Delta{PartDeltaKind: event.PartText, ContentDelta: "ished"}},
		event.PartEnd{Index: 0},
		event.StreamComplete{Message: event.Message{Role: "assistant", Content: "finished", FinishReason: "stop"}},
	}
	return evs, 6, 13
}

// benchRecord records benchStream per op through a Recorder, as the pool
// does for each run. Each op also does the store writes of the pool and
// spawn.Spawn around it (root and child created before their events, the
// child's final record before its end) and deletes the sessions
// afterwards, so that the store does not grow; those writes are the same
// in both benchmarks.
func benchRecord(b *testing.B, watched bool) {
	ctx := context.Background()
	st := memory.New()
	p := record.New(st, nil)
	if watched {
		proj := sessiontree.NewProjection(st, nil)
		defer proj.Subscribe(func(string, []sessiontree.Change) {})()
		defer p.Watch(proj)()
	}
	evs, start, end := benchStream()
	const root, child = "ses_broot", "ses_bchild"
	finish := func(s *session.Session) { s.Status, s.StopReason = session.StatusCompleted, event.StopCompleted }
	op := func() {
		if err := st.CreateSession(ctx, session.Session{ID: root, AgentName: "boss", Status: session.StatusRunning}); err != nil {
			b.Fatal(err)
		}
		r := p.Open(ctx, root, nil)
		for i, e := range evs {
			switch i {
			case start:
				if err := st.CreateSession(ctx, session.Session{ID: child, ParentID: root, Depth: 1, AgentName: "worker", Status: session.StatusRunning}); err != nil {
					b.Fatal(err)
				}
			case end:
				if err := st.UpdateSession(ctx, child, finish); err != nil {
					b.Fatal(err)
				}
			}
			r.Emit(e)
		}
		if err := st.DeleteSession(ctx, root); err != nil {
			b.Fatal(err)
		}
	}
	op() // warm up
	b.ReportAllocs()
	for b.Loop() {
		op()
	}
}

// BenchmarkRecord: nobody watches, the recorder only stores.
func BenchmarkRecord(b *testing.B) { benchRecord(b, false) }

// BenchmarkRecordProjected: a projection with a subscriber (doing
// nothing) watches every run, for comparison.
func BenchmarkRecordProjected(b *testing.B) { benchRecord(b, true) }
