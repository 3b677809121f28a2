package agui

import (
	"bytes"
	"context"
	"encoding/json"
	"github.com/agentpool/agentpool/server/agui/internal/wire"
	"strconv"
	"sync"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/session"
)

// StateTodosKey is the member of the AG-UI state that holds the root
// session's todo list (TodoWrite's plan_update).
const StateTodosKey = "todos"

// todosOf returns the todo list of a plan_update (never nil).
func todosOf(pu event.PlanUpdate) []wire.TodoItem {
	out := make([]wire.TodoItem, len(pu.Entries))
	for i, e := range pu.Entries {
		out[i] = wire.TodoItem{Content: e.Content, Status: e.Status, Priority: e.Priority, ActiveForm: e.ActiveForm}
	}
	return out
}

// runState follows the AG-UI state the client holds during one run, so
// that every change can be sent as a patch against it.
//
// The state is the client's (RunAgentInput.state) with one member owned by
// the server: "todos", the root session's todo list. The server's list wins
// over a "todos" the client sends; every other member is the client's and
// is echoed untouched.
type runState struct {
	input    json.RawMessage // RunAgentInput.state; nil when absent or null
	sent     bool            // a STATE_SNAPSHOT went out in this run
	object   bool            // the client's state is a JSON object
	hasTodos bool            // ... with a "todos" member
	diffable bool            // ... whose value is todos (sent by the server)
	todos    []wire.TodoItem
}

// start returns the snapshot that opens the run, nil when there is no state
// to send: no stored todo list and an absent or empty client state.
func (st *runState) start(stored []wire.TodoItem, has bool) json.RawMessage {
	if has {
		return st.snapshot(stored)
	}
	if stateEmpty(st.input) {
		return nil
	}
	st.sent = true
	if members, ok := objectMembers(st.input); ok {
		st.object = true
		_, st.hasTodos = members[StateTodosKey]
	}
	return st.input
}

// update records a new todo list and returns the event that brings the
// client's state up to date: a STATE_SNAPSHOT the first time in a run (or
// when the client's state is no object), else a STATE_DELTA; nil when the
// list did not change.
func (st *runState) update(todos []wire.TodoItem) *wire.Event {
	if !st.sent || !st.object {
		return &wire.Event{Type: wire.TypeStateSnapshot, Snapshot: st.snapshot(todos)}
	}
	var ops []patchOp
	switch {
	case !st.hasTodos:
		ops = []patchOp{{Op: "add", Path: "/" + StateTodosKey, Value: mustJSON(todos)}}
	case !st.diffable:
		ops = []patchOp{{Op: "replace", Path: "/" + StateTodosKey, Value: mustJSON(todos)}}
	default:
		ops = diffTodos(st.todos, todos)
	}
	st.hasTodos, st.diffable, st.todos = true, true, todos
	if len(ops) == 0 {
		return nil
	}
	return &wire.Event{Type: wire.TypeStateDelta, Patch: mustJSON(ops)}
}

// snapshot returns the whole state with todos in it, and records that the
// client holds it.
func (st *runState) snapshot(todos []wire.TodoItem) json.RawMessage {
	members, ok := objectMembers(st.input)
	if !ok || members == nil {
		// No state, or one that is no object (it cannot hold todos).
		members = map[string]json.RawMessage{}
	}
	members[StateTodosKey] = mustJSON(todos)
	st.sent, st.object, st.hasTodos, st.diffable, st.todos = true, true, true, true, todos
	return mustJSON(members)
}

// stateEmpty reports whether a client state is absent, null or {}.
func stateEmpty(raw json.RawMessage) bool {
	if len(bytes.TrimSpace(raw)) == 0 {
		return true
	}
	m, ok := objectMembers(raw)
	return ok && len(m) == 0
}

// objectMembers decodes a JSON object; ok is false for anything else. An
// absent state is an empty object.
func objectMembers(raw json.RawMessage) (map[string]json.RawMessage, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, true
	}
	if raw[0] != '{' {
		return nil, false
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, false
	}
	return m, true
}

// patchOp is one RFC 6902 operation.
type patchOp struct {
	Op    string          `json:"op"`
	Path  string          `json:"path"`
	Value json.RawMessage `json:"value,omitempty"` // add, replace
}

// diffTodos returns a JSON Patch that turns the state's todos from old
// into new: per-field replacements of the entries at the same index, adds
// at the end, removes from the end, or one replacement of the whole list
// when that is shorter (entries inserted or removed at the front).
func diffTodos(old, new []wire.TodoItem) []patchOp {
	var ops []patchOp
	base := "/" + StateTodosKey + "/"
	field := func(i int, name, o, n string) {
		p := base + strconv.Itoa(i) + "/" + name
		switch {
		case o == n:
		case o == "" && name == "activeForm":
			ops = append(ops, patchOp{Op: "add", Path: p, Value: mustJSON(n)})
		case n == "" && name == "activeForm":
			ops = append(ops, patchOp{Op: "remove", Path: p})
		default:
			ops = append(ops, patchOp{Op: "replace", Path: p, Value: mustJSON(n)})
		}
	}
	n := min(len(old), len(new))
	for i := range n {
		o, w := old[i], new[i]
		field(i, "content", o.Content, w.Content)
		field(i, "status", o.Status, w.Status)
		field(i, "priority", o.Priority, w.Priority)
		field(i, "activeForm", o.ActiveForm, w.ActiveForm)
	}
	for i := n; i < len(new); i++ {
		ops = append(ops, patchOp{Op: "add", Path: base + strconv.Itoa(i), Value: mustJSON(new[i])})
	}
	for i := len(old) - 1; i >= len(new); i-- {
		ops = append(ops, patchOp{Op: "remove", Path: base + strconv.Itoa(i)})
	}
	if len(ops) == 0 {
		return nil
	}
	whole := []patchOp{{Op: "replace", Path: "/" + StateTodosKey, Value: mustJSON(new)}}
	if len(mustJSON(ops)) >= len(mustJSON(whole)) {
		return whole
	}
	return ops
}

// maxThreadStates bounds the todo lists threadStates keeps in memory; one
// that was let go is read again from the store.
const maxThreadStates = 4096

// threadStates finds the todo list of a thread's root session when a run
// on the thread starts: the last plan_update in the session's event log.
// It remembers how far it read each log, so a later run reads only the
// events added since (by this server or anything else on the same store).
type threadStates struct {
	store session.Store
	mu    sync.Mutex
	bySes map[string]storedTodos
}

type storedTodos struct {
	seq   int64 // the last event read
	has   bool
	todos []wire.TodoItem
}

func newThreadStates(st session.Store) *threadStates {
	return &threadStates{store: st, bySes: map[string]storedTodos{}}
}

// load returns the current todo list of the root session sid; has is false
// when the session never had one.
func (t *threadStates) load(ctx context.Context, sid string) (todos []wire.TodoItem, has bool, err error) {
	t.mu.Lock()
	cur := t.bySes[sid]
	t.mu.Unlock()
	recs, err := t.store.Events(ctx, sid, cur.seq)
	if err != nil {
		return nil, false, err
	}
	for _, r := range recs {
		if pu, ok := r.Event.(event.PlanUpdate); ok {
			cur.todos, cur.has = todosOf(pu), true
		}
		cur.seq = max(cur.seq, r.Seq)
	}
	t.mu.Lock()
	if _, ok := t.bySes[sid]; !ok && len(t.bySes) >= maxThreadStates {
		for k := range t.bySes { // let an arbitrary one go
			delete(t.bySes, k)
			break
		}
	}
	t.bySes[sid] = cur
	t.mu.Unlock()
	return cur.todos, cur.has, nil
}

// maxResultDiffBytes bounds the file text that the diffs of one
// TOOL_CALL_RESULT carry in its metadata; larger diffs are left out (the
// client keeps a tool message's metadata and sends it back with every
// later run).
const maxResultDiffBytes = 64 << 10

// MetadataKey is the member of TOOL_CALL_RESULT.metadata under which the
// server puts what tool_call_complete carries for front ends.
const MetadataKey = "agentpool"

// resultMetadata is metadata.agentpool of a TOOL_CALL_RESULT: the front-end
// fields of tool_call_complete (spec/EVENTS.md), as the event names them.
type resultMetadata struct {
	IsError   bool             `json:"is_error,omitempty"`
	Locations []event.Location `json:"locations,omitempty"`
	Diffs     []event.FileDiff `json:"diffs,omitempty"`
	// DiffsOmitted counts the diffs left out for their size.
	DiffsOmitted int            `json:"diffs_omitted,omitempty"`
	Metadata     map[string]any `json:"metadata,omitempty"`
	// ChildSessionID and StopReason are set on the result of a tool that
	// ran a child session (task, ask_<worker>), whose content is the
	// child's answer in words (spawn.ReadableResult).
	ChildSessionID string `json:"child_session_id,omitempty"`
	StopReason     string `json:"stop_reason,omitempty"`
	// Input is the call's input when its TOOL_CALL_START had none to send
	// as ARGS (an external agent names it only later); left out over
	// maxResultDiffBytes.
	Input json.RawMessage `json:"input,omitempty"`
}

// toolResultMetadata returns the metadata of the TOOL_CALL_RESULT of ev
// (lateInput: the call's input, when its start had none), nil when there
// is nothing to say.
func toolResultMetadata(ev event.ToolCallComplete, child, stop string, lateInput json.RawMessage) json.RawMessage {
	md := resultMetadata{IsError: ev.IsError, Locations: ev.Locations, Metadata: ev.Metadata, ChildSessionID: child, StopReason: stop}
	if len(lateInput) <= maxResultDiffBytes && json.Valid(lateInput) {
		md.Input = lateInput
	}
	budget := maxResultDiffBytes
	for _, d := range ev.Diffs {
		size := len(d.NewText) + len(d.Path)
		if d.OldText != nil {
			size += len(*d.OldText)
		}
		if size > budget {
			md.DiffsOmitted++
			continue
		}
		budget -= size
		md.Diffs = append(md.Diffs, d)
	}
	if !md.IsError && len(md.Locations) == 0 && len(md.Diffs) == 0 && md.DiffsOmitted == 0 && len(md.Metadata) == 0 && child == "" && md.Input == nil {
		return nil
	}
	b, err := json.Marshal(map[string]resultMetadata{MetadataKey: md})
	if err != nil {
		// A tool's metadata that does not encode: the rest still goes.
		md.Metadata = nil
		if b, err = json.Marshal(map[string]resultMetadata{MetadataKey: md}); err != nil {
			return nil
		}
	}
	return b
}
