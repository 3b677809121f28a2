package pool_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/hook"
	"github.com/agentpool/agentpool/model"
	"github.com/agentpool/agentpool/pool"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/spawn"
)

// fakeEngine stores a run's events and messages itself, as a durable
// engine's workers do, and hands the events to the sink.
type fakeEngine struct {
	t    *testing.T
	p    *pool.Pool
	fail error // returned instead of running
	runs []pool.EngineRun
}

func (f *fakeEngine) RunRoot(ctx context.Context, run pool.EngineRun, sink event.Sink) (spawn.Result, error) {
	f.runs = append(f.runs, run)
	sid := run.Session.ID
	if !f.p.Runtime().Running(sid) {
		f.t.Errorf("Runtime().Running(%s) is false while the engine runs it", sid)
	}
	if _, err := f.p.RunSink(ctx, pool.RunRequest{SessionID: sid, Prompt: "meanwhile"}, nil); !errors.Is(err, session.ErrRunning) {
		f.t.Errorf("a second run of the session while the engine runs it: %v, want ErrRunning", err)
	}
	if f.fail != nil {
		return spawn.Result{}, f.fail
	}
	st := f.p.Store()
	now := time.Now()
	msgs := []session.Message{
		{ID: "msg_u" + now.Format("150405.000000000"), SessionID: sid, CreatedAt: now, Message: model.Message{Role: model.RoleUser, Parts: []model.Part{{Kind: model.PartText, Text: run.Prompt}}}},
		{ID: "msg_a" + now.Format("150405.000000000"), SessionID: sid, CreatedAt: now, Message: model.Message{Role: model.RoleAssistant, Parts: []model.Part{{Kind: model.PartText, Text: "ok"}}}},
	}
	if err := st.AppendMessages(ctx, sid, msgs...); err != nil {
		return spawn.Result{}, err
	}
	evs := []event.Event{
		event.RunStarted{RunID: run.RunID, SessionID: sid, AgentName: run.Node.Name()},
		event.StreamComplete{Message: event.Message{Content: "ok"}},
	}
	for _, e := range evs {
		if err := st.AppendEvents(ctx, sid, e); err != nil {
			return spawn.Result{}, err
		}
		sink.Emit(e)
	}
	err := st.UpdateSession(ctx, sid, func(s *session.Session) {
		s.Status, s.StopReason = session.StatusCompleted, event.StopCompleted
		s.TotalCost += 0.5
	})
	return spawn.Result{Output: "ok", StopReason: event.StopCompleted}, err
}

// sessionHooks counts session/start and session/end.
type sessionHooks struct {
	mu         sync.Mutex
	start, end []string
}

// registry is a hook registry whose session points h counts.
func (h *sessionHooks) registry() *hook.Registry {
	reg := hook.New(hook.Options{})
	reg.OnSessionStart.Register(func(_ context.Context, s hook.SessionStart) error {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.start = append(h.start, s.Source)
		return nil
	})
	reg.OnSessionEnd.Register(func(_ context.Context, s hook.SessionEnd) error {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.end = append(h.end, string(s.Reason))
		return nil
	})
	return reg
}

// watcher collects what a processor hands its watchers.
type watcher struct {
	mu    sync.Mutex
	kinds []string
}

func (w *watcher) Observe(_ context.Context, _ string, e event.Event) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.kinds = append(w.kinds, string(e.Kind()))
}

func enginePool(t *testing.T) (*pool.Pool, *fakeEngine, *sessionHooks, *watcher) {
	t.Helper()
	m, err := config.Parse("engine.yaml", []byte("agents:\n  a: {model: {type: test}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	eng := &fakeEngine{t: t}
	hooks := &sessionHooks{}
	p, err := pool.New(m, pool.Options{Engine: eng, Hooks: hooks.registry()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	eng.p = p
	w := &watcher{}
	t.Cleanup(p.Processor().Watch(w))
	return p, eng, hooks, w
}

// With Options.Engine, RunSink runs the root on the engine and keeps its
// guarantees: the session is created and claimed (a second run is
// refused, Runtime().Running says so), the session hooks fire once, the
// processor's watchers and the sink get the events the engine stored,
// which are not stored again; a continued session gets its history.
func TestRunSinkOnEngine(t *testing.T) {
	p, eng, hooks, w := enginePool(t)
	ctx := context.Background()
	var got []string
	sink := event.SinkFunc(func(e event.Event) { got = append(got, string(e.Kind())) })
	res, err := p.RunSink(ctx, pool.RunRequest{Prompt: "first"}, sink)
	if err != nil {
		t.Fatal(err)
	}
	if res.Result.Output != "ok" || res.Result.StopReason != event.StopCompleted || res.TotalCost != 0.5 {
		t.Errorf("result = %+v", res)
	}
	if _, err := p.RunSink(ctx, pool.RunRequest{SessionID: res.SessionID, Prompt: "second"}, sink); err != nil {
		t.Fatal(err)
	}
	if len(eng.runs) != 2 || len(eng.runs[0].History) != 0 || len(eng.runs[1].History) != 2 || eng.runs[1].Prompt != "second" {
		t.Fatalf("engine runs = %+v", eng.runs)
	}
	if eng.runs[0].RunID == eng.runs[1].RunID {
		t.Errorf("both runs have id %s", eng.runs[0].RunID)
	}
	recs, err := p.Store().Events(ctx, res.SessionID, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := "run_started stream_complete run_started stream_complete"
	var stored []string
	for _, r := range recs {
		stored = append(stored, string(r.Event.Kind()))
	}
	for name, kinds := range map[string][]string{"stored": stored, "sink": got, "watcher": w.kinds} {
		if s := strings.Join(kinds, " "); s != want {
			t.Errorf("%s: %s, want %s", name, s, want)
		}
	}
	if strings.Join(hooks.start, " ") != "startup resume" || strings.Join(hooks.end, " ") != "completed completed" {
		t.Errorf("session hooks: start %v, end %v", hooks.start, hooks.end)
	}
	if p.Runtime().Running(res.SessionID) {
		t.Error("the session is still registered after its run")
	}
	if s, err := p.Store().GetSession(ctx, res.SessionID); err != nil || s.Status != session.StatusCompleted {
		t.Errorf("session after the runs: %+v %v", s, err)
	}
}

// An engine that fails ends the run with an error: the stream ends with a
// run_error (stored once, since the engine stored none) and the session
// is not left running.
func TestRunSinkEngineFails(t *testing.T) {
	p, eng, _, w := enginePool(t)
	eng.fail = errors.New("no frontend")
	ctx := context.Background()
	var got []event.Event
	res, err := p.RunSink(ctx, pool.RunRequest{Prompt: "go"}, event.SinkFunc(func(e event.Event) { got = append(got, e) }))
	if err != nil {
		t.Fatal(err)
	}
	if res.Result.StopReason != event.StopError || res.Result.Err == nil {
		t.Errorf("result = %+v", res.Result)
	}
	if len(got) != 1 || len(w.kinds) != 1 {
		t.Fatalf("sink got %v, watcher %v; want one run_error", got, w.kinds)
	}
	if re, ok := got[0].(event.RunError); !ok || re.Message != "no frontend" {
		t.Errorf("event = %#v", got[0])
	}
	recs, _ := p.Store().Events(ctx, res.SessionID, 0)
	if len(recs) != 1 {
		t.Errorf("stored %d events, want the run_error once", len(recs))
	}
	if s, err := p.Store().GetSession(ctx, res.SessionID); err != nil || s.Status != session.StatusError {
		t.Errorf("session: %+v %v", s, err)
	}
}
