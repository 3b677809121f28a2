package todo

import (
	"container/list"
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/spawn"
	"github.com/agentpool/agentpool/tool"
)

// TodoWrite is the tool's name.
const TodoWrite = "TodoWrite"

// Todo statuses.
const (
	Pending    = "pending"
	InProgress = "in_progress"
	Completed  = "completed"
)

// maxSessions bounds the lists kept in memory.
const maxSessions = 4096

// Item is one entry of a todo list (Claude Code's fields).
type Item struct {
	Content    string `json:"content" jsonschema:"description=What to do, in the imperative (\"Run the tests\")"`
	Status     string `json:"status" jsonschema:"enum=pending,enum=in_progress,enum=completed"`
	ActiveForm string `json:"activeForm,omitempty" jsonschema:"description=The same task in the present continuous (\"Running the tests\"), shown while it is in progress"`
}

type args struct {
	Todos []Item `json:"todos" jsonschema:"description=The whole updated todo list: it replaces the previous one"`
}

// Toolset keeps the todo lists of the sessions of a pool.
type Toolset struct {
	mu    sync.Mutex
	lists map[string]*list.Element // session id -> element of order
	order *list.List               // of *entry, most recently updated first
	tool  tool.Tool
}

type entry struct {
	session string
	items   []Item
}

// New returns an empty toolset.
func New() *Toolset {
	t := &Toolset{lists: map[string]*list.Element{}, order: list.New()}
	t.tool = tool.New(TodoWrite, description, t.write)
	return t
}

const description = "Create or update the todo list of this session, to plan a task of several steps and show the " +
	"user your progress. Send the whole list every time: it replaces the previous one. Keep exactly one item " +
	"in_progress while you work, mark an item completed as soon as it is done, and add items you discover. " +
	"Skip it for a task of one or two trivial steps."

// Tools returns the toolset's tools: TodoWrite.
func (t *Toolset) Tools() []tool.Tool { return []tool.Tool{todoTool{t.tool}} }

// List returns a copy of the session's current list (nil when it has none
// in memory).
func (t *Toolset) List(sessionID string) []Item {
	t.mu.Lock()
	defer t.mu.Unlock()
	if el, ok := t.lists[sessionID]; ok {
		return append([]Item(nil), el.Value.(*entry).items...)
	}
	return nil
}

func (t *Toolset) write(ctx context.Context, call tool.Call, a args) (tool.Result, error) {
	counts := map[string]int{}
	for i, it := range a.Todos {
		if strings.TrimSpace(it.Content) == "" {
			return tool.Errorf("todos[%d]: content must not be empty", i), nil
		}
		switch it.Status {
		case Pending, InProgress, Completed:
		default:
			return tool.Errorf("todos[%d]: status must be pending, in_progress or completed, got %q", i, it.Status), nil
		}
		counts[it.Status]++
	}
	items := append([]Item(nil), a.Todos...)
	t.store(call.SessionID, items)
	if inv := spawn.InvocationFrom(ctx); inv != nil {
		inv.Sink.Emit(PlanUpdate(items))
	}
	msg := fmt.Sprintf("Todo list updated: %d items (%d completed, %d in progress, %d pending).",
		len(items), counts[Completed], counts[InProgress], counts[Pending])
	if counts[InProgress] > 1 {
		msg += " More than one item is in progress: keep one at a time."
	}
	return tool.Result{Content: msg, Metadata: map[string]any{"todos": items}}, nil
}

// PlanUpdate is the plan_update event of a list. Priorities are not part
// of Claude Code's list: every entry is "medium".
func PlanUpdate(items []Item) event.PlanUpdate {
	entries := make([]event.PlanEntry, len(items))
	for i, it := range items {
		entries[i] = event.PlanEntry{Content: it.Content, Priority: "medium", Status: it.Status, ActiveForm: it.ActiveForm}
	}
	return event.PlanUpdate{Entries: entries}
}

func (t *Toolset) store(session string, items []Item) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if el, ok := t.lists[session]; ok {
		el.Value.(*entry).items = items
		t.order.MoveToFront(el)
		return
	}
	t.lists[session] = t.order.PushFront(&entry{session: session, items: items})
	for t.order.Len() > maxSessions {
		last := t.order.Back()
		t.order.Remove(last)
		delete(t.lists, last.Value.(*entry).session)
	}
}

// todoTool gives TodoWrite its kind and title.
type todoTool struct{ tool.Tool }

func (t todoTool) Info() tool.Info {
	i := t.Tool.Info()
	i.Kind = tool.KindThink
	return i
}

func (todoTool) Title(tool.Call) string { return "Update the todo list" }
