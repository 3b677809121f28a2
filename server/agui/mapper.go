package agui

import (
	"encoding/json"
	"errors"
	"fmt"
	"github.com/agentpool/agentpool/approval"
	"sort"
	"strings"
	"sync"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/id"
	"github.com/agentpool/agentpool/pool"
	"github.com/agentpool/agentpool/server/agui/internal/wire"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/spawn"
)

// item is one mapped event on its way to the client, with what the queue
// needs to know about it.
type item struct {
	// ev is the event. A delta's (classDelta) is its part's template,
	// shared by every delta of the part and never changed once made: the
	// item carries the fragment and its time (delta, ts), so that a delta
	// costs no event of its own.
	ev    *wire.Event
	delta string
	// joined, once a delta joined this one (mergeDelta), holds the
	// joined text instead of delta: appending to it is amortized, where
	// delta += would copy the whole text at each join.
	joined *strings.Builder
	ts     int64
	// owner is the session whose pool event produced this AG-UI event (the
	// parent for SUBAGENT_STARTED/FINISHED/ERROR). The queue only merges a
	// delta into an earlier one when nothing of the same owner sits between
	// them, so each session's order is kept.
	owner string
	class itemClass
}

// appendSSE appends the item as one server-sent event.
func (it *item) appendSSE(b []byte) []byte {
	if it.class != classDelta {
		return it.ev.AppendSSE(b)
	}
	e := *it.ev
	e.Delta, e.Timestamp = it.text(), it.ts
	return e.AppendSSE(b)
}

// text is a delta's text, joined deltas included.
func (it *item) text() string {
	if it.joined != nil {
		return it.joined.String()
	}
	return it.delta
}

// textLen is len(it.text()).
func (it *item) textLen() int {
	if it.joined != nil {
		return it.joined.Len()
	}
	return len(it.delta)
}

// join appends d to a delta's text.
func (it *item) join(d string) {
	if it.joined == nil {
		it.joined = new(strings.Builder)
		it.joined.Grow(2 * (len(it.delta) + len(d)))
		it.joined.WriteString(it.delta)
		it.delta = ""
	}
	it.joined.WriteString(d)
}

type itemClass uint8

const (
	classLifecycle itemClass = iota // never dropped, never merged: the producer waits
	classDelta                      // text, reasoning or argument fragment: may be merged
	classDroppable                  // progress notice: may be dropped when the queue is full
)

// emitFunc receives the mapper's output, in order.
type emitFunc func(item)

// mapperConfig configures a mapper.
type mapperConfig struct {
	ThreadID    string
	RunID       string
	ParentRunID string
	RootSession string          // the root session of the run
	State       json.RawMessage // the input state (RunAgentInput.state)
	// Todos is the todo list of the thread's root session from earlier
	// runs, when HasTodos; it goes into the state the run starts with.
	Todos    []wire.TodoItem
	HasTodos bool
	// Now returns the timestamp of an event (Unix ms); time.Now when nil.
	Now func() int64
	// NewID makes message ids; id.Ascending when nil.
	NewID func(prefix string) string
	// OnRootStarted is called once, with the root's run_started.
	OnRootStarted func(event.RunStarted)
	// Approvals, when set, holds the approval notices for the run: the
	// requests of the run's sessions become approval_asked and
	// approval_replied events (approvals_map.go).
	Approvals *runApprovals
	// ClientResults are the tool calls whose results the client brought
	// (its tool messages): their tool_call_complete sends nothing, the
	// client has the message already.
	ClientResults map[string]bool
}

// mapper turns the pool's event stream of one root run into AG-UI events.
// The pool's recorder serializes the sink calls and Finish runs after
// RunSink returned; mu also lets the run's approval forwarder
// (ForwardApprovals) map notices while the run waits for an answer.
type mapper struct {
	// mu guards the mapper's state, its maps (sessions, toolMsg, asked)
	// included: one lock, because a mapper is one root run's and its sink
	// calls come one at a time (above); only the approval forwarder
	// contends.
	mu       sync.Mutex
	cfg      mapperConfig
	emit     emitFunc
	started  bool
	finished bool
	sessions map[string]*sessState
	root     *sessState
	// rootErr is the root's own run_error, held back until the run ends
	// (async children may still report after it).
	rootErr *event.RunError
	// toolMsg maps an open tool call to the assistant message it belongs
	// to (for SUBAGENT_STARTED.parentMessageId).
	toolMsg map[string]string
	// state is the AG-UI state the client holds.
	state runState
	// asked holds the approvals announced and not yet settled, by id.
	asked map[string]*askedApproval
}

// sessState is the AG-UI view of one session of the run.
type sessState struct {
	id       string
	parent   *sessState
	name     string
	sub      bool // a subagent (opened with SUBAGENT_STARTED)
	ended    bool
	turn     int
	stepOpen bool
	stepName string
	// msgID is the assistant message of the current turn: every text part
	// of the turn goes into it and its tool calls point at it.
	msgID string
	parts map[int]*openPart
	// calls are the tool calls announced (TOOL_CALL_START) and not yet
	// answered (TOOL_CALL_RESULT), true for one announced without its
	// input; nil until the first.
	calls    map[string]bool
	children []*sessState // open subagents, in start order
	lastErr  string       // the session's own run_error message
	// act is a subagent's activity message, which its content goes to
	// (activity.go).
	act *activity
}

type openPart struct {
	kind string      // event.PartText, PartThinking, PartToolCall
	id   string      // message id (text, reasoning) or tool call id
	tmpl *wire.Event // the template of the part's deltas (item.ev), made by the first
}

func newMapper(cfg mapperConfig, emit emitFunc) *mapper {
	if cfg.NewID == nil {
		cfg.NewID = id.Ascending
	}
	m := &mapper{cfg: cfg, emit: emit, sessions: map[string]*sessState{}, toolMsg: map[string]string{},
		asked: map[string]*askedApproval{}}
	m.state.input = cfg.State
	m.root = &sessState{id: cfg.RootSession, parts: map[int]*openPart{}}
	m.sessions[cfg.RootSession] = m.root
	return m
}

func (m *mapper) now() int64 {
	if m.cfg.Now != nil {
		return m.cfg.Now()
	}
	return nowMillis()
}

// out emits one event attributed to s (none for the root).
func (m *mapper) out(s *sessState, class itemClass, e *wire.Event) {
	e.Timestamp = m.now()
	if s != nil && s.sub && e.SubagentRunID == "" && !runScoped(e.Type) {
		e.SubagentRunID = s.id
	}
	owner := m.cfg.RootSession
	if s != nil {
		owner = s.id
	}
	m.emit(item{ev: e, owner: owner, class: class})
}

func runScoped(t string) bool {
	return t == wire.TypeRunStarted || t == wire.TypeRunFinished || t == wire.TypeRunError
}

// start emits RUN_STARTED and, when there is state, its snapshot, once.
func (m *mapper) start() {
	if m.started {
		return
	}
	m.started = true
	m.out(nil, classLifecycle, &wire.Event{Type: wire.TypeRunStarted, ThreadID: m.cfg.ThreadID, RunID: m.cfg.RunID,
		ParentRunID: m.cfg.ParentRunID, ProtocolVersion: wire.ProtocolVersion})
	if snap := m.state.start(m.cfg.Todos, m.cfg.HasTodos); snap != nil {
		m.out(nil, classLifecycle, &wire.Event{Type: wire.TypeStateSnapshot, Snapshot: snap})
	}
}

// Map maps one event of the root stream, after the approval notices
// queued before it.
func (m *mapper) Map(e event.Event) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.finished {
		return
	}
	m.start()
	m.drainApprovals()
	sid, inner := event.Unwrap(m.cfg.RootSession, e)
	s := m.sessions[sid]
	if s == nil {
		w, _ := e.(event.Subagent)
		s = m.fallbackOpen(sid, w)
	}
	if s.ended {
		return // nothing of a session follows its end (invariant 2)
	}
	if s.sub && m.subContent(s, inner) {
		return
	}
	switch ev := inner.(type) {
	case event.RunStarted:
		if s == m.root && m.cfg.OnRootStarted != nil {
			m.cfg.OnRootStarted(ev)
		}
	case event.PartStart:
		if ev.Index == 0 || !s.stepOpen {
			m.newTurn(s) // parts restart at index 0 with every model response
		}
		m.openPart(s, ev.Index, ev.Part.PartKind, ev.Part.ToolCallID, ev.Part.ToolName)
		switch ev.Part.PartKind {
		case event.PartToolCall:
			m.delta(s, ev.Index, ev.Part.Args)
		default:
			m.delta(s, ev.Index, ev.Part.Content)
		}
	case event.PartDelta:
		if s.parts[ev.Index] == nil {
			// A delta without its start: open the part it belongs to.
			if !s.stepOpen {
				m.newTurn(s)
			}
			m.openPart(s, ev.Index, ev.Delta.PartDeltaKind, ev.Delta.ToolCallID, "")
		}
		d := ev.Delta.ContentDelta
		if ev.Delta.PartDeltaKind == event.PartToolCall {
			d = ev.Delta.ArgsDelta
		}
		m.delta(s, ev.Index, d)
	case event.PartEnd:
		m.closePart(s, ev.Index)
	case event.ToolCallStart:
		// A model's call was announced by its part; a producer without
		// model parts (an external ACP agent) announces it here.
		m.announceCall(s, ev)
	case event.ToolCallProgress:
		m.out(s, classDroppable, &wire.Event{Type: wire.TypeCustom, Name: "tool_call_progress", Value: mustJSON(ev)})
	case event.ToolCallComplete:
		if s == m.root && m.cfg.ClientResults[ev.ToolCallID] {
			break
		}
		// The call's approval, if it was announced, is settled first.
		m.awaitApprovals(func(a *askedApproval) bool { return a.sess == s && a.callID == ev.ToolCallID })
		for idx, p := range s.parts {
			if p.kind == event.PartToolCall && p.id == ev.ToolCallID {
				m.closePart(s, idx)
			}
		}
		delete(m.toolMsg, ev.ToolCallID)
		var lateInput json.RawMessage
		if s.calls[ev.ToolCallID] && hasInput(ev.ToolInput) {
			lateInput = ev.ToolInput
		}
		delete(s.calls, ev.ToolCallID)
		// A delegation's result reads as the child's answer in words;
		// its session and stop reason go to the metadata.
		content, child, stop, _ := spawn.ReadableResult(ev.ToolResult)
		m.out(s, classLifecycle, &wire.Event{Type: wire.TypeToolCallResult, MessageID: m.cfg.NewID(id.Message),
			ToolCallID: ev.ToolCallID, Content: content, Role: "tool", Metadata: toolResultMetadata(ev, child, stop, lateInput)})
	case event.PlanUpdate:
		if s != m.root {
			// A subagent's list is no thread state (its id never recurs).
			m.out(s, classLifecycle, &wire.Event{Type: wire.TypeCustom, Name: "plan_update", Value: mustJSON(ev)})
			break
		}
		// Never dropped nor merged: the client applies every patch.
		if e := m.state.update(todosOf(ev)); e != nil {
			m.out(nil, classLifecycle, e)
		}
	case event.Custom:
		if ev.Source == approval.EventSource {
			// The stored record of an approval (durable runs read it
			// back); this server sends its own approval_asked and
			// approval_replied from the broker, in their place.
			break
		}
		v := mustJSON(ev.EventData)
		m.out(s, classLifecycle, &wire.Event{Type: wire.TypeCustom, Name: ev.EventType, Value: v})
	case event.StreamComplete:
		m.closeContent(s)
	case event.RunError:
		m.closeContent(s)
		s.lastErr = ev.Message
		if s == m.root {
			re := ev
			m.rootErr = &re
		}
	case event.SpawnSessionStart:
		m.openSubagent(s, ev)
	case event.SpawnSessionEnd:
		if c := m.sessions[ev.ChildSessionID]; c != nil && c.sub && !c.ended {
			m.closeSubagent(c, ev.StopReason, ev.Error, ev.LastAssistantMessage)
		}
	}
}

// fallbackOpen opens a subagent seen without its spawn_session_start (a
// producer that does not emit it): the wrapper names it.
func (m *mapper) fallbackOpen(sid string, w event.Subagent) *sessState {
	parent := m.root
	if p := m.sessions[w.ParentSessionID]; p != nil && !p.ended {
		parent = p
	}
	name := w.SourceName
	if name == "" {
		name = "subagent"
	}
	return m.openSubagent(parent, event.SpawnSessionStart{ChildSessionID: sid, ParentSessionID: parent.id,
		ToolCallID: w.ToolCallID, SourceName: name})
}

func (m *mapper) openSubagent(parent *sessState, ev event.SpawnSessionStart) *sessState {
	if c := m.sessions[ev.ChildSessionID]; c != nil {
		if !c.ended || ev.Metadata[spawn.MetaResumed] == nil {
			return c // a second start for a known child is ignored
		}
		// A finished child continued in its session (spawn.Resume): a
		// new subagent run under the same id.
		delete(m.sessions, ev.ChildSessionID)
	}
	c := &sessState{id: ev.ChildSessionID, parent: parent, name: ev.SourceName, sub: true, parts: map[int]*openPart{}}
	m.sessions[c.id] = c
	parent.children = append(parent.children, c)
	e := &wire.Event{Type: wire.TypeSubagentStarted, SubagentRunID: c.id, Name: ev.SourceName, Description: ev.Description,
		ParentToolCallID: ev.ToolCallID, ParentMessageID: m.toolMsg[ev.ToolCallID]}
	if parent.sub {
		e.ParentSubagentRunID = parent.id
	}
	m.out(parent, classLifecycle, e)
	m.startActivity(c, ev.Description)
	return c
}

// closeSubagent closes c (and whatever of it is still open) with its
// outcome.
func (m *mapper) closeSubagent(c *sessState, stopReason event.StopReason, errText, output string) {
	for len(c.children) > 0 {
		k := c.children[len(c.children)-1]
		m.closeSubagent(k, event.StopAborted, "ended with its parent "+c.id, "")
	}
	m.closeContent(c)
	c.ended = true
	if p := c.parent; p != nil {
		for i, k := range p.children {
			if k == c {
				p.children = append(p.children[:i], p.children[i+1:]...)
				break
			}
		}
	}
	switch stopReason {
	case event.StopCompleted, event.StopMaxTokens, event.StopRefusal:
		m.endActivity(c, true, output)
		m.out(c.parent, classLifecycle, &wire.Event{Type: wire.TypeSubagentFinished, SubagentRunID: c.id, Result: output})
	default:
		msg := errText
		if msg == "" {
			msg = c.lastErr
		}
		if msg == "" {
			msg = fmt.Sprintf("subagent %s ended: %s", c.name, stopReason)
		}
		m.endActivity(c, false, msg)
		m.out(c.parent, classLifecycle, &wire.Event{Type: wire.TypeSubagentError, SubagentRunID: c.id, Message: msg, Code: string(stopReason)})
	}
}

// newTurn finishes the session's current step and starts the next one.
func (m *mapper) newTurn(s *sessState) {
	m.closeContent(s)
	s.turn++
	s.stepOpen = true
	s.stepName = fmt.Sprintf("turn %d", s.turn)
	s.msgID = ""
	m.out(s, classLifecycle, &wire.Event{Type: wire.TypeStepStarted, StepName: s.stepName})
}

func (m *mapper) openPart(s *sessState, idx int, kind, toolCallID, toolName string) {
	if s.parts[idx] != nil {
		m.closePart(s, idx)
	}
	p := &openPart{kind: kind}
	switch kind {
	case event.PartText:
		if s.msgID == "" {
			s.msgID = m.cfg.NewID(id.Message)
		}
		p.id = s.msgID
		m.out(s, classLifecycle, &wire.Event{Type: wire.TypeTextMessageStart, MessageID: p.id, Role: "assistant"})
	case event.PartThinking:
		p.id = m.cfg.NewID(id.Message)
		m.out(s, classLifecycle, &wire.Event{Type: wire.TypeReasoningStart, MessageID: p.id})
		m.out(s, classLifecycle, &wire.Event{Type: wire.TypeReasoningMessageStart, MessageID: p.id, Role: "reasoning"})
	case event.PartToolCall:
		if toolCallID == "" {
			toolCallID = m.cfg.NewID(id.ToolCall)
		}
		if toolName == "" {
			toolName = "unknown"
		}
		p.id = toolCallID
		if s.msgID != "" {
			m.toolMsg[toolCallID] = s.msgID
		}
		s.addCall(toolCallID, false)
		m.out(s, classLifecycle, &wire.Event{Type: wire.TypeToolCallStart, ToolCallID: toolCallID, ToolCallName: toolName, ParentMessageID: s.msgID})
	default:
		return // an unknown part kind has no AG-UI form
	}
	s.parts[idx] = p
}

// announceCall announces a tool call that started without a part (its
// producer streams no model parts: an external ACP agent): START with the
// input it has so far as ARGS, END at once (its approval, if asked,
// follows the END), then its RESULT when it completes. An agent that names
// the input only later (opencode announces its calls with none) has no
// ARGS: its result carries the input in metadata.agentpool.input.
func (m *mapper) announceCall(s *sessState, ev event.ToolCallStart) {
	if _, ok := s.calls[ev.ToolCallID]; ok || ev.ToolCallID == "" {
		return
	}
	if !s.stepOpen {
		m.newTurn(s)
	}
	name := ev.ToolName
	if name == "" {
		name = "unknown"
	}
	if s.msgID != "" {
		m.toolMsg[ev.ToolCallID] = s.msgID
	}
	s.addCall(ev.ToolCallID, !hasInput(ev.RawInput))
	m.out(s, classLifecycle, &wire.Event{Type: wire.TypeToolCallStart, ToolCallID: ev.ToolCallID, ToolCallName: name, ParentMessageID: s.msgID})
	if hasInput(ev.RawInput) {
		m.outDelta(s, s.deltaTemplate(&wire.Event{Type: wire.TypeToolCallArgs, ToolCallID: ev.ToolCallID}), string(ev.RawInput))
	}
	m.out(s, classLifecycle, &wire.Event{Type: wire.TypeToolCallEnd, ToolCallID: ev.ToolCallID})
}

// addCall records an announced call; noInput: announced without its input.
func (s *sessState) addCall(id string, noInput bool) {
	if s.calls == nil {
		s.calls = map[string]bool{}
	}
	s.calls[id] = noInput
}

// hasInput reports whether a tool call's raw input says anything.
func hasInput(raw json.RawMessage) bool {
	in := strings.TrimSpace(string(raw))
	return in != "" && in != "{}" && in != "null"
}

func (m *mapper) delta(s *sessState, idx int, d string) {
	p := s.parts[idx]
	if p == nil || d == "" {
		return
	}
	if p.tmpl == nil {
		switch p.kind {
		case event.PartText:
			p.tmpl = s.deltaTemplate(&wire.Event{Type: wire.TypeTextMessageContent, MessageID: p.id})
		case event.PartThinking:
			p.tmpl = s.deltaTemplate(&wire.Event{Type: wire.TypeReasoningMessageContent, MessageID: p.id})
		case event.PartToolCall:
			p.tmpl = s.deltaTemplate(&wire.Event{Type: wire.TypeToolCallArgs, ToolCallID: p.id})
		default:
			return
		}
	}
	m.outDelta(s, p.tmpl, d)
}

// deltaTemplate completes a new delta template of session s: once
// emitted, a template is read by the stream's writer and never changed.
func (s *sessState) deltaTemplate(tmpl *wire.Event) *wire.Event {
	if s.sub {
		tmpl.SubagentRunID = s.id
	}
	return tmpl
}

// outDelta emits fragment d of session s with the delta template tmpl
// (item.ev): the fragment and its time are the item's.
func (m *mapper) outDelta(s *sessState, tmpl *wire.Event, d string) {
	m.emit(item{ev: tmpl, delta: d, ts: m.now(), owner: s.id, class: classDelta})
}

func (m *mapper) closePart(s *sessState, idx int) {
	p := s.parts[idx]
	if p == nil {
		return
	}
	delete(s.parts, idx)
	switch p.kind {
	case event.PartText:
		m.out(s, classLifecycle, &wire.Event{Type: wire.TypeTextMessageEnd, MessageID: p.id})
	case event.PartThinking:
		m.out(s, classLifecycle, &wire.Event{Type: wire.TypeReasoningMessageEnd, MessageID: p.id})
		m.out(s, classLifecycle, &wire.Event{Type: wire.TypeReasoningEnd, MessageID: p.id})
	case event.PartToolCall:
		m.out(s, classLifecycle, &wire.Event{Type: wire.TypeToolCallEnd, ToolCallID: p.id})
	}
}

// closeContent closes the session's open parts (in index order) and its
// step.
func (m *mapper) closeContent(s *sessState) {
	if len(s.parts) > 0 {
		idx := make([]int, 0, len(s.parts))
		for i := range s.parts {
			idx = append(idx, i)
		}
		sort.Ints(idx)
		for _, i := range idx {
			m.closePart(s, i)
		}
	}
	if s.stepOpen {
		s.stepOpen = false
		m.out(s, classLifecycle, &wire.Event{Type: wire.TypeStepFinished, StepName: s.stepName})
	}
}

// Finish closes everything still open and ends the run according to res:
// RUN_FINISHED for a completed run (outcome "cancelled" for an aborted
// one), RUN_ERROR for a failed one.
func (m *mapper) Finish(res pool.RunResult) {
	m.mu.Lock()
	defer m.mu.Unlock()
	stop := res.Result.StopReason
	switch stop {
	case event.StopCompleted, event.StopMaxTokens, event.StopRefusal:
		result := res.Result.Output
		if len(res.Result.ClientCalls) > 0 {
			// The client runs its tools: the run has no result yet, and
			// the client reads its calls as pending (no TOOL_CALL_RESULT).
			result = ""
		}
		m.end(&wire.Event{Type: wire.TypeRunFinished, ThreadID: m.cfg.ThreadID, RunID: m.cfg.RunID, Result: result})
	case event.StopAborted:
		m.end(&wire.Event{Type: wire.TypeRunFinished, ThreadID: m.cfg.ThreadID, RunID: m.cfg.RunID, Outcome: "cancelled"})
	default:
		msg, code := "", string(stop)
		if errors.Is(res.Result.Err, session.ErrNotStored) {
			// The stream completed; the store did not keep it.
			msg, code = res.Result.Err.Error(), session.StoreErrorCode
		} else if m.rootErr != nil {
			msg = m.rootErr.Message
			if m.rootErr.Code != "" {
				code = m.rootErr.Code
			}
		}
		if msg == "" && res.Result.Err != nil {
			msg = res.Result.Err.Error()
		}
		if msg == "" {
			msg = "run ended: " + string(stop)
		}
		m.end(&wire.Event{Type: wire.TypeRunError, Message: msg, Code: code})
	}
}

// Fail ends a run that failed outside the event stream, once it has
// started (a run that never started answers its request with an HTTP
// error instead).
func (m *mapper) Fail(err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.started {
		return
	}
	m.end(&wire.Event{Type: wire.TypeRunError, Message: err.Error(), Code: "internal"})
}

func (m *mapper) end(last *wire.Event) {
	if m.finished {
		return
	}
	m.start()
	// Every approval the run announced and the broker settled is settled
	// in the stream before the subagents close and the run ends.
	m.awaitApprovals(func(*askedApproval) bool { return true })
	for len(m.root.children) > 0 {
		c := m.root.children[len(m.root.children)-1]
		m.closeSubagent(c, event.StopAborted, "the run ended before the subagent", "")
	}
	m.closeContent(m.root)
	m.finished = true
	m.out(nil, classLifecycle, last)
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		return json.RawMessage(`{}`)
	}
	return b
}
