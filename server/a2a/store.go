package a2a

import (
	"container/list"
	"context"
	"maps"
	"slices"
	"sync"

	"github.com/a2aproject/a2a-go/a2a"
)

// taskStore is the SDK's TaskStore (a2asrv.TaskStore) in memory, bounded:
// past max tasks, the oldest ended task is forgotten (tasks/get then
// answers task not found); running tasks are bounded by Options.MaxRuns.
// It keeps copies: the SDK goes on changing the task it saved.
type taskStore struct {
	max   int
	mu    sync.Mutex
	tasks map[a2a.TaskID]*list.Element // of *a2a.Task, oldest first
	order *list.List
}

func newTaskStore(max int) *taskStore {
	return &taskStore{max: max, tasks: map[a2a.TaskID]*list.Element{}, order: list.New()}
}

// Save implements a2asrv.TaskStore.
func (s *taskStore) Save(_ context.Context, t *a2a.Task) error {
	c := copyTask(t)
	s.mu.Lock()
	defer s.mu.Unlock()
	if el, ok := s.tasks[t.ID]; ok {
		el.Value = c
		return nil
	}
	s.tasks[t.ID] = s.order.PushBack(c)
	for el := s.order.Front(); len(s.tasks) > s.max && el != nil; {
		next := el.Next()
		if old := el.Value.(*a2a.Task); old.Status.State.Terminal() {
			s.order.Remove(el)
			delete(s.tasks, old.ID)
		}
		el = next
	}
	return nil
}

// Get implements a2asrv.TaskStore.
func (s *taskStore) Get(_ context.Context, id a2a.TaskID) (*a2a.Task, error) {
	s.mu.Lock()
	var t *a2a.Task
	if el, ok := s.tasks[id]; ok {
		t = el.Value.(*a2a.Task) // never changed once saved: copied outside the lock
	}
	s.mu.Unlock()
	if t == nil {
		return nil, a2a.ErrTaskNotFound
	}
	return copyTask(t), nil
}

// copyTask copies what the SDK changes in place: the slices of the task
// and of its artifacts, and the maps. Parts are values.
func copyTask(t *a2a.Task) *a2a.Task {
	c := *t
	c.History = slices.Clone(t.History)
	c.Metadata = maps.Clone(t.Metadata)
	c.Artifacts = make([]*a2a.Artifact, len(t.Artifacts))
	for i, a := range t.Artifacts {
		ac := *a
		ac.Parts = slices.Clone(a.Parts)
		ac.Metadata = maps.Clone(a.Metadata)
		c.Artifacts[i] = &ac
	}
	if len(t.Artifacts) == 0 {
		c.Artifacts = nil
	}
	return &c
}

// contexts maps A2A context ids to the sessions that ran them, the least
// recently used forgotten past max.
type contexts struct {
	max   int
	mu    sync.Mutex
	byID  map[string]*list.Element // of ctxEntry
	order *list.List               // least recently used first
}

type ctxEntry struct{ context, session string }

func newContexts(max int) *contexts {
	return &contexts{max: max, byID: map[string]*list.Element{}, order: list.New()}
}

// session returns the session of context id, if known.
func (c *contexts) session(id string) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.byID[id]
	if !ok {
		return "", false
	}
	c.order.MoveToBack(el)
	return el.Value.(ctxEntry).session, true
}

// put remembers that context id runs in session sid.
func (c *contexts) put(id, sid string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.byID[id]; ok {
		el.Value = ctxEntry{id, sid}
		c.order.MoveToBack(el)
		return
	}
	c.byID[id] = c.order.PushBack(ctxEntry{id, sid})
	for len(c.byID) > c.max {
		el := c.order.Front()
		c.order.Remove(el)
		delete(c.byID, el.Value.(ctxEntry).context)
	}
}
