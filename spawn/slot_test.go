package spawn_test

import (
	"context"
	"testing"
	"time"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/session/memory"
	"github.com/agentpool/agentpool/spawn"
)

// panicOnEnd is a lifecycle observer that panics when a child ends.
type panicOnEnd struct{}

func (panicOnEnd) SubagentStart(context.Context, spawn.StartInfo) {}
func (panicOnEnd) SubagentEnd(context.Context, spawn.EndInfo)     { panic("observer broke") }

// quick is a node that ends at once.
type quick struct{}

func (quick) Name() string                 { return "quick" }
func (quick) Description() string          { return "" }
func (quick) SourceType() event.SourceType { return event.SourceAgent }
func (quick) ModelID() string              { return "" }
func (quick) Run(context.Context, *spawn.Invocation) spawn.Result {
	return spawn.Result{Output: "ok", StopReason: event.StopCompleted}
}

// A spawn that panics after its child ran (here: in an observer) still
// gives back its concurrency slot: with max_children 1 the next spawn of
// the same parent does not wait forever, and the node is not left busy.
func TestPanickingSpawnReleasesItsSlot(t *testing.T) {
	st := memory.New()
	rt := spawn.NewRuntime(spawn.Config{Store: st, Limits: spawn.Limits{MaxChildren: 1}, Lifecycle: panicOnEnd{}})
	ctx := context.Background()
	root := session.Session{ID: "ses_root", AgentName: "root", Status: session.StatusRunning}
	if err := st.CreateSession(ctx, root); err != nil {
		t.Fatal(err)
	}
	inv := mustRoot(t)(rt.NewRoot(root, "run_1", "", nil, event.SinkFunc(func(event.Event) {})))
	defer rt.Release(inv)
	for i := range 2 {
		done := make(chan any, 1)
		go func() {
			defer func() { done <- recover() }()
			_, _ = spawn.Spawn(ctx, inv, spawn.Request{Node: quick{}, Prompt: "go"})
		}()
		select {
		case r := <-done:
			if r == nil {
				t.Fatalf("spawn %d: the observer's panic did not reach the caller", i)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("spawn %d is stuck waiting for a child slot", i)
		}
	}
	if n := rt.Busy("quick"); n != 0 {
		t.Fatalf("quick is busy %d times after its children ended", n)
	}
}
