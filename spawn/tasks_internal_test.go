package spawn

import (
	"context"
	"runtime"
	"testing"
	"weak"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/session/memory"
)

// doneNode ends at once.
type doneNode struct{}

func (doneNode) Name() string                 { return "done" }
func (doneNode) Description() string          { return "" }
func (doneNode) SourceType() event.SourceType { return event.SourceAgent }
func (doneNode) ModelID() string              { return "" }
func (doneNode) Run(context.Context, *Invocation) Result {
	return Result{Output: "ok", StopReason: event.StopCompleted}
}

// The task table goes with its run: once a root run is released, nothing
// of the runtime keeps its tasks (a server's runtime, which lives as long
// as the server, does not grow with every background task ever run).
func TestTaskTableReleasedWithRun(t *testing.T) {
	ctx := context.Background()
	st := memory.New()
	rt := NewRuntime(Config{Store: st})
	task := func() weak.Pointer[Task] {
		s := session.Session{ID: "ses_root", AgentName: "root", Status: session.StatusRunning}
		if err := st.CreateSession(ctx, s); err != nil {
			t.Fatal(err)
		}
		inv, err := rt.NewRoot(s, "run_1", "", nil, event.SinkFunc(func(event.Event) {}))
		if err != nil {
			t.Fatal(err)
		}
		c, err := Spawn(ctx, inv, Request{Node: doneNode{}, Prompt: "x", Async: true})
		if err != nil {
			t.Fatal(err)
		}
		tk, ok := inv.Task(c.TaskID)
		if !ok {
			t.Fatal("the run does not find its own task")
		}
		<-tk.Done()
		rt.Release(inv)
		return weak.Make(tk)
	}()
	for range 5 {
		if task.Value() == nil {
			return
		}
		runtime.GC()
	}
	t.Fatal("the task of a released run is still reachable")
}
