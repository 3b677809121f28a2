package spawn_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/model"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/spawn"
)

// A background task belongs to the root run that started it: another run
// of the same runtime (another client of a server) cannot read its status
// or its output, even knowing its id.
func TestTaskTableScopedToRun(t *testing.T) {
	h := newHarness(t, spawn.Limits{})
	h.agent("bg", textModel("SECRET OUTPUT"))
	h.agent("starter", newFnModel(func(_ context.Context, turn int, _ *model.Request) reply {
		if turn == 0 {
			return reply{calls: []call{{name: "task", args: map[string]any{"agent_or_team": "bg", "prompt": "work", "async_mode": true}}}}
		}
		return reply{text: "started"}
	}))
	first := h.run(context.Background(), "starter", "go")
	ss := starts(first.root, first.evs)
	if len(ss) != 1 || ss[0].TaskID == "" {
		t.Fatalf("starts = %+v", ss)
	}
	taskID := ss[0].TaskID

	var (
		mu   sync.Mutex
		seen []model.Part
	)
	h.agent("snoop", newFnModel(func(_ context.Context, turn int, req *model.Request) reply {
		if turn == 0 {
			return reply{calls: []call{{name: "task_status", args: map[string]any{"task_id": taskID}}, {name: "task_output", args: map[string]any{"task_id": taskID}}}}
		}
		mu.Lock()
		seen = toolResults(req.Messages)
		mu.Unlock()
		return reply{text: "done"}
	}))
	out := h.run(context.Background(), "snoop", "look")
	if out.res.StopReason != event.StopCompleted {
		t.Fatalf("snoop run: %+v", out.res)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 2 {
		t.Fatalf("tool results %+v", seen)
	}
	for _, r := range seen {
		if !r.IsError || !strings.Contains(r.Text, "unknown task") || strings.Contains(r.Text, "SECRET") {
			t.Errorf("%s of another run's task: %q (error %v)", r.ToolName, r.Text, r.IsError)
		}
	}
}

// Registering a root is one step with the check that it is not running:
// a second NewRoot of a running session is refused, and a run that ends
// late never unregisters the run that holds the session now.
func TestNewRootRefusesRunningSession(t *testing.T) {
	h := newHarness(t, spawn.Limits{})
	s := session.Session{ID: "ses_once", AgentName: "a", Status: session.StatusRunning}
	sink := event.SinkFunc(func(event.Event) {})
	first := mustRoot(t)(h.rt.NewRoot(s, "run_1", "", nil, sink))
	if _, err := h.rt.NewRoot(s, "run_2", "", nil, sink); !errors.Is(err, session.ErrRunning) || !strings.Contains(err.Error(), "already running (in process") {
		t.Fatalf("second NewRoot of a running session: %v", err)
	}
	h.rt.Release(first)
	second := mustRoot(t)(h.rt.NewRoot(s, "run_3", "", nil, sink))
	h.rt.Release(first) // late, again
	if !h.rt.Running(s.ID) {
		t.Fatal("the first run's release unregistered the second run")
	}
	h.rt.Release(second)
	if h.rt.Running(s.ID) {
		t.Fatal("still registered after its release")
	}
}
