package spawn_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/event/eventtest"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/session/memory"
	"github.com/agentpool/agentpool/spawn"
)

// nodeFunc is a node whose run is fn.
type nodeFunc struct {
	name string
	fn   func(ctx context.Context, inv *spawn.Invocation) spawn.Result
}

func (n nodeFunc) Name() string                 { return n.name }
func (n nodeFunc) Description() string          { return "" }
func (n nodeFunc) SourceType() event.SourceType { return event.SourceAgent }
func (n nodeFunc) ModelID() string              { return "" }
func (n nodeFunc) Run(ctx context.Context, inv *spawn.Invocation) spawn.Result {
	return n.fn(ctx, inv)
}

// newRoot stores and registers a root session whose stream goes to sink.
func newRoot(t *testing.T, st session.Store, rt *spawn.Runtime, sink event.Sink) *spawn.Invocation {
	t.Helper()
	s := session.Session{ID: "ses_root", AgentName: "root", SourceType: event.SourceAgent, Status: session.StatusRunning}
	if err := st.CreateSession(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	return mustRoot(t)(rt.NewRoot(s, "run_1", "go", nil, sink))
}

// RunRoot ends a root run as Spawn ends a child's: its own and its
// children's usage in the final record, undelivered injections stored,
// the session released.
func TestRunRootEndsTheSession(t *testing.T) {
	st := memory.New()
	rt := spawn.NewRuntime(spawn.Config{Store: st})
	sink, events := eventtest.Collect()
	inv := newRoot(t, st, rt, sink)
	child := nodeFunc{name: "child", fn: func(_ context.Context, inv *spawn.Invocation) spawn.Result {
		inv.Sink.Emit(event.RunStarted{SessionID: inv.Session.ID, RunID: inv.RunID, AgentName: "child", ParentSessionID: inv.Session.ParentID})
		inv.Sink.Emit(event.StreamComplete{Message: event.Message{Role: "assistant", Content: "ok"}})
		return spawn.Result{Output: "ok", Usage: event.Usage{InputTokens: 2, OutputTokens: 3}, Cost: 0.25}
	}}
	root := nodeFunc{name: "root", fn: func(ctx context.Context, inv *spawn.Invocation) spawn.Result {
		if spawn.InvocationFrom(ctx) != inv {
			t.Error("the node's context does not carry its invocation")
		}
		inv.Sink.Emit(event.RunStarted{SessionID: inv.Session.ID, RunID: inv.RunID, AgentName: "root"})
		if _, err := spawn.Spawn(ctx, inv, spawn.Request{Node: child, Prompt: "do"}); err != nil {
			t.Error(err)
		}
		inv.Inject("too late to deliver")
		inv.Sink.Emit(event.StreamComplete{Message: event.Message{Role: "assistant", Content: "done"}})
		return spawn.Result{Output: "done", Usage: event.Usage{InputTokens: 1, OutputTokens: 1}, Cost: 0.5}
	}}
	end := rt.RunRoot(context.Background(), root, inv, inv.Session.CreatedAt)
	if end.Result.StopReason != event.StopCompleted || end.TotalUsage.InputTokens != 3 || end.TotalUsage.OutputTokens != 4 || end.TotalCost != 0.75 {
		t.Errorf("end %+v", end)
	}
	if err := eventtest.CheckInvariants("ses_root", events()); err != nil {
		t.Error(err)
	}
	rec, err := st.GetSession(context.Background(), "ses_root")
	if err != nil {
		t.Fatal(err)
	}
	if rec.Status != session.StatusCompleted || rec.Usage.InputTokens != 1 || rec.Cost != 0.5 || rec.TotalUsage != end.TotalUsage || rec.TotalCost != 0.75 {
		t.Errorf("final record %+v", rec)
	}
	msgs, err := st.Messages(context.Background(), "ses_root")
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 1 || !msgs[0].Synthetic || msgs[0].Text() != "too late to deliver" {
		t.Errorf("stored messages %+v", msgs)
	}
	if rt.Running("ses_root") || rt.Inject("ses_root", "x") == nil {
		t.Error("the root is still registered")
	}
}

// A panicking root ends with stop reason error, a run_error as the last
// event of its stream and the error in its record.
func TestRunRootPanic(t *testing.T) {
	st := memory.New()
	rt := spawn.NewRuntime(spawn.Config{Store: st})
	sink, events := eventtest.Collect()
	inv := newRoot(t, st, rt, sink)
	end := rt.RunRoot(context.Background(), panicNode{}, inv, inv.Session.CreatedAt)
	if end.Result.StopReason != event.StopError || !strings.Contains(end.Result.Err.Error(), "node exploded") {
		t.Fatalf("result %+v", end.Result)
	}
	evs := events()
	last, ok := evs[len(evs)-1].(event.RunError)
	if !ok || last.Code != "panic" || !strings.Contains(last.Message, "node exploded") {
		t.Fatalf("last event %#v", evs[len(evs)-1])
	}
	if rec, _ := st.GetSession(context.Background(), "ses_root"); rec.Status != session.StatusError || !strings.Contains(rec.Metadata["error"].(string), "node exploded") {
		t.Errorf("final record %+v", rec)
	}
}

// recorder is a spawn.Recorder that keeps what it is given.
type recorder struct {
	mu       sync.Mutex
	live     []event.Event
	recorded map[string][]event.Event
}

func (r *recorder) Emit(e event.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.live = append(r.live, e)
}

func (r *recorder) Record(sid string, e event.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.recorded == nil {
		r.recorded = map[string][]event.Event{}
	}
	r.recorded[sid] = append(r.recorded[sid], e)
}

// Invocation.Record goes through the run's recorder, for the root and its
// children, and never down the live stream; a run without a recorder
// records nothing.
func TestInvocationRecord(t *testing.T) {
	st := memory.New()
	rt := spawn.NewRuntime(spawn.Config{Store: st})
	rec := &recorder{}
	inv := newRoot(t, st, rt, rec)
	note := event.Custom{EventType: "note"}
	child := nodeFunc{name: "child", fn: func(_ context.Context, inv *spawn.Invocation) spawn.Result {
		inv.Record(note)
		return spawn.Result{}
	}}
	inv.Record(note)
	c, err := spawn.Spawn(context.Background(), inv, spawn.Request{Node: child, Prompt: "do"})
	if err != nil {
		t.Fatal(err)
	}
	rt.Release(inv)
	if len(rec.recorded["ses_root"]) != 1 || len(rec.recorded[c.SessionID]) != 1 {
		t.Errorf("recorded %v", rec.recorded)
	}
	for _, e := range rec.live {
		if _, inner := event.Unwrap("ses_root", e); inner.Kind() == event.KindCustom {
			t.Errorf("a recorded event went down the live stream: %#v", e)
		}
	}

	plain := spawn.NewRuntime(spawn.Config{Store: memory.New()})
	p := newRoot(t, plain.Store(), plain, event.SinkFunc(func(event.Event) {}))
	p.Record(note) // nothing to record it: nothing happens
	plain.Release(p)
}
