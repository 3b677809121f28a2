package memory_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/model"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/session/memory"
)

// delegatedShape is what one delegated call writes to the store: a root
// session that calls a tool which spawns one child, 6 messages (4 in the
// root, 2 in the child), 18 events (10 and 8), each appended one at a time
// as the runtime does, and a final update of both sessions. The messages
// and events are built once: the benchmark measures the store, not the
// boxing of events or the building of messages.
type delegatedShape struct {
	rootMsgs, childMsgs []session.Message
	rootEvs, childEvs   []event.Event
	created             time.Time
	// One-element buffers for the variadic appends, as the processor
	// keeps: a call through the interface would allocate each slice.
	oneEv  [1]event.Event
	oneMsg [1]session.Message
}

func (d *delegatedShape) event(ctx context.Context, st session.Store, sid string, ev event.Event) error {
	d.oneEv[0] = ev
	err := st.AppendEvents(ctx, sid, d.oneEv[:]...)
	d.oneEv[0] = nil
	return err
}

func (d *delegatedShape) message(ctx context.Context, st session.Store, sid string, m session.Message) error {
	d.oneMsg[0] = m
	err := st.AppendMessages(ctx, sid, d.oneMsg[:]...)
	d.oneMsg[0] = session.Message{}
	return err
}

func newDelegatedShape() *delegatedShape {
	now := time.Now()
	text := func(role model.Role, s string) model.Message {
		return model.Message{Role: role, Parts: []model.Part{{Kind: model.PartText, Text: s}}}
	}
	msg := func(id string, m model.Message) session.Message {
		return session.Message{ID: id, AgentName: "agent", CreatedAt: now, Message: m}
	}
	d := &delegatedShape{created: now}
	d.rootMsgs = []session.Message{
		msg("msg_1", text(model.RoleUser, "Delegate the work.")),
		msg("msg_2", model.Message{Role: model.RoleAssistant, Parts: []model.Part{
			{Kind: model.PartText, Text: "I will ask the worker."},
			{Kind: model.PartToolCall, ToolCallID: "cal_1", ToolName: "ask_worker", Args: json.RawMessage(`{"prompt":"do the work"}`)},
		}}),
		msg("msg_3", model.Message{Role: model.RoleTool, Parts: []model.Part{
			{Kind: model.PartToolResult, ToolCallID: "cal_1", ToolName: "ask_worker", Text: "the work is done"},
		}}),
		msg("msg_4", text(model.RoleAssistant, "The worker did the work.")),
	}
	d.childMsgs = []session.Message{
		msg("msg_5", text(model.RoleUser, "do the work")),
		msg("msg_6", text(model.RoleAssistant, "the work is done")),
	}
	textPart := func(s string) []event.Event {
		return []event.Event{
			event.PartStart{Index: 0, Part: event.Part{PartKind: event.PartText}},
			event.PartDelta{Index: 0, Delta: event.Delta{PartDeltaKind: event.PartText, ContentDelta: s}},
			event.PartEnd{Index: 0},
		}
	}
	d.rootEvs = append([]event.Event{event.RunStarted{SessionID: "ses_root", RunID: "run_1", AgentName: "parent"}}, textPart("I will ask the worker.")...)
	d.rootEvs = append(d.rootEvs,
		event.ToolCallStart{ToolCallID: "cal_1", ToolName: "ask_worker"},
		event.SpawnSessionStart{ChildSessionID: "ses_child"},
		event.SpawnSessionEnd{ChildSessionID: "ses_child"},
		event.ToolCallComplete{ToolCallID: "cal_1", ToolName: "ask_worker"},
	)
	d.rootEvs = append(d.rootEvs, event.PartDelta{Index: 0, Delta: event.Delta{PartDeltaKind: event.PartText, ContentDelta: "done"}}, event.StreamComplete{})
	d.childEvs = append([]event.Event{event.RunStarted{SessionID: "ses_child", RunID: "run_2", AgentName: "worker"}}, textPart("the work ")...)
	d.childEvs = append(d.childEvs, textPart("is done")...)
	d.childEvs = append(d.childEvs, event.StreamComplete{})
	return d
}

// call writes one delegated call with the session ids root and child.
func (d *delegatedShape) call(ctx context.Context, st session.Store, root, child string) error {
	if err := st.CreateSession(ctx, session.Session{ID: root, AgentName: "parent", SourceType: event.SourceAgent, Status: session.StatusRunning, CreatedAt: d.created}); err != nil {
		return err
	}
	if err := d.message(ctx, st, root, d.rootMsgs[0]); err != nil {
		return err
	}
	for _, ev := range d.rootEvs[:5] {
		if err := d.event(ctx, st, root, ev); err != nil {
			return err
		}
	}
	if err := d.message(ctx, st, root, d.rootMsgs[1]); err != nil {
		return err
	}
	if err := st.CreateSession(ctx, session.Session{ID: child, ParentID: root, Depth: 1, AgentName: "worker", SourceType: event.SourceAgent, Status: session.StatusRunning, CreatedAt: d.created}); err != nil {
		return err
	}
	for _, m := range d.childMsgs {
		if err := d.message(ctx, st, child, m); err != nil {
			return err
		}
	}
	for _, ev := range d.childEvs {
		if err := d.event(ctx, st, child, ev); err != nil {
			return err
		}
	}
	if err := st.UpdateSession(ctx, child, func(s *session.Session) {
		s.Status = session.StatusCompleted
		s.StopReason = event.StopCompleted
		s.Usage.InputTokens, s.Usage.OutputTokens = 100, 20
	}); err != nil {
		return err
	}
	for _, ev := range d.rootEvs[5:] {
		if err := d.event(ctx, st, root, ev); err != nil {
			return err
		}
	}
	for _, m := range d.rootMsgs[2:] {
		if err := d.message(ctx, st, root, m); err != nil {
			return err
		}
	}
	return st.UpdateSession(ctx, root, func(s *session.Session) {
		s.Status = session.StatusCompleted
		s.StopReason = event.StopCompleted
		s.Usage.InputTokens, s.Usage.OutputTokens = 200, 40
	})
}

// BenchmarkDelegatedShape writes one delegated call per op into a store
// made by New() (the default retention bounds it). The session ids are
// made per op (two allocations of the benchmark itself).
func BenchmarkDelegatedShape(b *testing.B) {
	benchDelegated(b, memory.New())
}

// BenchmarkDelegatedShapeUnbounded is BenchmarkDelegatedShape on a store
// that keeps everything: the heap grows with every op.
func BenchmarkDelegatedShapeUnbounded(b *testing.B) {
	benchDelegated(b, memory.New(memory.WithMaxRoots(0)))
}

func benchDelegated(b *testing.B, st session.Store) {
	defer st.Close()
	ctx := context.Background()
	d := newDelegatedShape()
	buf := make([]byte, 0, 32)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		buf = strconv.AppendInt(append(buf[:0], "ses_r"...), int64(i), 10)
		root := string(buf)
		buf = strconv.AppendInt(append(buf[:0], "ses_c"...), int64(i), 10)
		child := string(buf)
		if err := d.call(ctx, st, root, child); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStreamedDeltas: what the store allocates to keep one streamed
// answer, a session's 200 text deltas of 20 bytes appended one at a time
// through its event log as a run's recorder does (the events are made
// before the timer), then the session deleted.
func BenchmarkStreamedDeltas(b *testing.B) {
	const n = 200
	evs := make([]event.Event, n)
	for i := range evs {
		evs[i] = event.PartDelta{Delta: event.Delta{PartDeltaKind: event.PartText, ContentDelta: fmt.Sprintf("%019d ", i)}}
	}
	ctx := context.Background()
	st := memory.New()
	defer st.Close()
	b.ReportAllocs()
	for b.Loop() {
		if err := st.CreateSession(ctx, session.Session{ID: "ses_s"}); err != nil {
			b.Fatal(err)
		}
		l, err := st.EventLog(ctx, "ses_s")
		if err != nil {
			b.Fatal(err)
		}
		for i := range evs {
			if err := l.AppendEvents(evs[i : i+1]...); err != nil {
				b.Fatal(err)
			}
		}
		if err := st.DeleteSession(ctx, "ses_s"); err != nil {
			b.Fatal(err)
		}
	}
}
