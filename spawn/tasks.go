package spawn

import "sync"

// Async (background) tasks. A task belongs to the root run that started
// it: its table lives in the run's state (runState), so that the tools of
// another run, which may be another client's, cannot read it, and so that
// it goes away with the run instead of growing as long as the runtime
// lives (a server's runtime lives as long as the server).

// TaskStatus values.
const (
	TaskRunning = "running"
)

// Task is an async (background) child.
type Task struct {
	ID        string
	SessionID string
	Node      string
	parent    string // the session that started it
	done      chan struct{}
	mu        sync.Mutex
	result    Result
}

// Done is closed when the task has ended.
func (t *Task) Done() <-chan struct{} { return t.done }

// Status returns "running" or the stop reason.
func (t *Task) Status() string {
	select {
	case <-t.done:
		t.mu.Lock()
		defer t.mu.Unlock()
		return string(t.result.StopReason)
	default:
		return TaskRunning
	}
}

// Result returns the task's result once done.
func (t *Task) Result() (Result, bool) {
	select {
	case <-t.done:
		t.mu.Lock()
		defer t.mu.Unlock()
		return t.result, true
	default:
		return Result{}, false
	}
}

// taskTable holds the tasks of one root run. The zero value is ready.
type taskTable struct {
	mu    sync.Mutex
	tasks map[string]*Task
}

func (tt *taskTable) add(t *Task) {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	if tt.tasks == nil {
		tt.tasks = map[string]*Task{}
	}
	tt.tasks[t.ID] = t
}

// ofSession returns the latest task that runs (or ran) in session sid.
func (tt *taskTable) ofSession(sid string) *Task {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	var last *Task
	for _, t := range tt.tasks {
		if t.SessionID == sid && (last == nil || t.ID > last.ID) {
			last = t
		}
	}
	return last
}

func (tt *taskTable) get(id string) (*Task, bool) {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	t, ok := tt.tasks[id]
	return t, ok
}

// Task returns an async task that a session of this invocation's root run
// started, by id; tasks of other runs are not found.
func (inv *Invocation) Task(taskID string) (*Task, bool) {
	if inv.run == nil {
		return nil, false
	}
	return inv.run.tasks.get(taskID)
}
