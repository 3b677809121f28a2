package hook_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/hook"
	"github.com/agentpool/agentpool/pool"
	"github.com/agentpool/agentpool/spawn"
)

// sessionLog records session/start and session/end.
type sessionLog struct {
	mu  sync.Mutex
	got []string
}

func (l *sessionLog) add(s string) {
	l.mu.Lock()
	l.got = append(l.got, s)
	l.mu.Unlock()
}

func (l *sessionLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.got, " ")
}

func keptPool(t *testing.T) (*pool.Pool, *hook.Registry, *sessionLog) {
	t.Helper()
	m, err := config.Parse("agentpool.yaml", []byte("agents:\n  main:\n    model: {type: scripted, turns: [\"one\"]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	reg := hook.New(hook.Options{})
	log := &sessionLog{}
	reg.OnSessionStart.Register(func(_ context.Context, s hook.SessionStart) error {
		log.add("start:" + s.Source + ":" + s.Model)
		return nil
	})
	reg.OnSessionEnd.Register(func(_ context.Context, s hook.SessionEnd) error {
		log.add("end:" + s.Cause + ":" + string(s.Reason))
		return nil
	})
	p, err := pool.New(m, pool.Options{Hooks: reg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p, reg, log
}

// A session kept open across runs (a protocol server's session) starts at
// its first run and ends when EndSession ends it, not around each run; a
// run in progress when it is ended ends it when that run ends. Without
// KeepSession every run is a session of its own. Keeping is a field of the
// request, not a value of the run's context.
func TestKeepSessionInRequest(t *testing.T) {
	p, reg, log := keptPool(t)
	ctx := context.Background()
	res, err := p.RunSink(ctx, pool.RunRequest{Prompt: "a", KeepSession: true}, event.Discard)
	if err != nil {
		t.Fatal(err)
	}
	for _, prompt := range []string{"b", "c"} {
		if _, err := p.RunSink(ctx, pool.RunRequest{Prompt: prompt, SessionID: res.SessionID, KeepSession: true}, event.Discard); err != nil {
			t.Fatal(err)
		}
	}
	if got := log.String(); got != "start:startup:test" {
		t.Fatalf("after three runs of a kept session: %q", got)
	}
	reg.EndSession(ctx, res.SessionID, hook.CauseClosed)
	reg.EndSession(ctx, res.SessionID, hook.CauseClosed) // once only
	if got := log.String(); got != "start:startup:test end:closed:completed" {
		t.Fatalf("after EndSession: %q", got)
	}
	// Opened again (it has history now): resume; ended while a run is in
	// progress: at that run's end.
	ended := make(chan struct{})
	reg.OnTurnStop.Use(func(ctx context.Context, s hook.TurnStop, next hook.Next[hook.TurnStop, hook.StopDecision]) hook.StopDecision {
		reg.EndSession(ctx, s.SessionID, hook.CauseDisconnected)
		select {
		case <-ended:
		default:
			close(ended)
		}
		return next(ctx, s)
	})
	if _, err := p.RunSink(ctx, pool.RunRequest{Prompt: "d", SessionID: res.SessionID, KeepSession: true}, event.Discard); err != nil {
		t.Fatal(err)
	}
	<-ended
	if got := log.String(); got != "start:startup:test end:closed:completed start:resume:test end:disconnected:completed" {
		t.Fatalf("a session ended during a run: %q", got)
	}
	// Not kept: one session per run.
	if _, err := p.RunSink(ctx, pool.RunRequest{Prompt: "e", SessionID: res.SessionID}, event.Discard); err != nil {
		t.Fatal(err)
	}
	if got := log.String(); !strings.HasSuffix(got, "start:resume:test end:run_ended:completed") {
		t.Errorf("a run that is not kept: %q", got)
	}
}

// An Early seam listener runs before those added without it, whenever it
// was added.
func TestEarlyListenerRunsFirst(t *testing.T) {
	s := hook.NewSeam[string, string]("test/seam", nil, nil, nil)
	mk := func(name string) hook.SeamFunc[string, string] {
		return func(ctx context.Context, in string, next hook.Next[string, string]) string {
			return next(ctx, in+name)
		}
	}
	s.Use(mk("a"))
	s.Use(mk("E1"), hook.Early())
	s.Use(mk("b"))
	s.Use(mk("E2"), hook.Early())
	got := s.Run(context.Background(), "", func(_ context.Context, in string) string { return in })
	if got != "E1E2ab" {
		t.Errorf("order %q, want E1E2ab", got)
	}
}

// An approval that allows with an updated input runs the tool with it;
// tools/post-execute learns how long the tool ran.
func TestApprovalUpdatedInputAndDuration(t *testing.T) {
	h := newHarness(t, hook.New(hook.Options{}), spawn.Limits{})
	pr := &probe{name: "probe"}
	h.agent("main", scripted(t, callTurn("probe", map[string]any{"path": "/etc"}), text("done")), pr)
	h.reg.Approvals.Set("main", map[string]string{"probe": "ask"})
	h.reg.OnApproval.Use(func(ctx context.Context, r hook.ApprovalRequest, next hook.Next[hook.ApprovalRequest, hook.ApprovalDecision]) hook.ApprovalDecision {
		return hook.ApprovalDecision{Outcome: hook.AllowedOnce, UpdatedInput: json.RawMessage(`{"path":"/tmp"}`)}
	})
	var mu sync.Mutex
	var outcome hook.ToolOutcome
	h.reg.OnPostExecute.Use(func(ctx context.Context, o hook.ToolOutcome, next hook.Next[hook.ToolOutcome, hook.PostDecision]) hook.PostDecision {
		mu.Lock()
		outcome = o
		mu.Unlock()
		return next(ctx, o)
	})
	h.run(context.Background(), "main", "go")
	if got := pr.ran(); len(got) != 1 || got[0] != `{"path":"/tmp"}` {
		t.Errorf("the tool ran with %q", got)
	}
	mu.Lock()
	defer mu.Unlock()
	if string(outcome.Input) != `{"path":"/tmp"}` || outcome.DurationMS < 0 || outcome.Interrupted {
		t.Errorf("post-execute saw %+v", outcome)
	}
}
