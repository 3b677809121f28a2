package opencode

import (
	"net/http"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/server/opencode/internal/wire"
	"github.com/agentpool/agentpool/sessiontree"
)

// A session's todo list is its latest plan (TodoWrite's plan_update
// events): GET /session/{id}/todo answers it, todo.updated announces
// each new one. The list of a session whose messages are in memory is
// kept with them; any other is the processor's (its projection while
// the run is projected, else the last plan_update of the session's event
// log, so stored sessions keep theirs across restarts).

// todosOfPlan converts a plan into OpenCode's todo items ([] for none).
func todosOfPlan(entries []event.PlanEntry) []wire.Todo {
	out := make([]wire.Todo, 0, len(entries))
	for _, e := range entries {
		p := e.Priority
		if p == "" {
			p = "medium"
		}
		out = append(out, wire.Todo{Content: e.Content, Status: e.Status, Priority: p})
	}
	return out
}

// planUpdated keeps a session's new todo list and publishes todo.updated.
// st.mu is held.
func (s *eventMapper) planUpdated(st *sessState, c sessiontree.PlanUpdated) {
	todos := todosOfPlan(c.Entries)
	s.facts.touch(st, true).todos = todos
	s.publish("todo.updated", c.SessionID, todoProps{SessionID: c.SessionID, Todos: todos})
}

// handleTodo answers GET /session/{id}/todo: the session's todo list, []
// when it has none.
func (s *historyAPI) handleTodo(w http.ResponseWriter, r *http.Request) {
	sid := r.PathValue("sessionID")
	ctx := r.Context()
	if _, err := s.store.GetSession(ctx, sid); err != nil {
		storeError(w, sid, err)
		return
	}
	st := s.facts.ensure(sid)
	st.mu.Lock()
	if t := s.facts.touch(st, false); t != nil && t.todos != nil {
		todos := t.todos
		st.mu.Unlock()
		writeJSON(w, http.StatusOK, todos)
		return
	}
	st.mu.Unlock()
	plan, _, err := s.proj.Plan(ctx, sid)
	if err != nil {
		storeError(w, sid, err)
		return
	}
	todos := todosOfPlan(plan)
	st.mu.Lock()
	// A todo.updated that came meanwhile is newer: keep it.
	if t := st.trans; t != nil && t.todos == nil {
		t.todos = todos
	}
	st.mu.Unlock()
	writeJSON(w, http.StatusOK, todos)
}
