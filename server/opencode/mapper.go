package opencode

import (
	"encoding/json"
	"github.com/agentpool/agentpool/spawn"
	"maps"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/server/opencode/internal/wire"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/sessiontree"
)

// publish sends one event to every subscriber. The event of a session is
// published while its lock is held, so that a session's events reach the
// bus in the order its state changed; the bus orders all of them (hub).
// The properties are encoded here, before the bus's lock.
func (s *base) publish(typ, sid string, props any) {
	e := &busEvent{typ: typ, session: sid}
	if sid != "" {
		e.dir = s.dirOfID(sid)
	}
	b, err := json.Marshal(props)
	if err != nil {
		s.log.Error("opencode: encode event", "type", typ, "err", err)
		return
	}
	e.props = b
	s.hub.publish(e)
}

// publishDelta publishes a message.part.delta of the session whose state
// is st, the most frequent event: its properties are encoded when a stream
// writes it (deltaProps.appendJSON), and it costs one allocation and no
// look-up of the session.
func (s *base) publishDelta(st *sessState, d deltaProps) {
	s.hub.publish(newDelta(st.dirOr(s.dir), d))
}

// setBusyLocked marks a session running and publishes session.status
// busy on the change. st.mu is held.
func (s *base) setBusyLocked(st *sessState, sid string) {
	if st.busy.Load() {
		return
	}
	st.busy.Store(true)
	s.publish("session.status", sid, sessionStatusProps{SessionID: sid, Status: wire.SessionStatus{Type: "busy"}})
}

// setIdleLocked ends a session's run: session.status idle, session.idle.
// st.mu is held.
func (s *base) setIdleLocked(st *sessState, sid string) {
	st.busy.Store(false)
	s.publish("session.status", sid, sessionStatusProps{SessionID: sid, Status: wire.SessionStatus{Type: "idle"}})
	s.publish("session.idle", sid, sessionIDProps{SessionID: sid})
}

// eventMapper maps the projection's Changes to bus events and keeps the
// transcripts they build. It runs inside the runs' recorders, many at
// once: each change takes the lock of its own session only, and it never
// waits for a client.
type eventMapper struct {
	*base
}

// onChanges maps the projection's Changes of one event to bus events and
// keeps the transcripts, in the order of cs.
func (s *eventMapper) onChanges(owner string, cs []sessiontree.Change) {
	s.changes(cs, nil)
}

// forRun returns the mapper of one run's Changes
// (sessiontree.SubscribeRuns): it keeps the states of the run's sessions,
// found once per run instead of once per Change. The projection calls it
// for one event of the run at a time.
func (s *eventMapper) forRun(string) func(string, []sessiontree.Change) {
	k := &keptStates{}
	return func(_ string, cs []sessiontree.Change) { s.changes(cs, k) }
}

// changes maps cs in their order; k (nil: none) keeps the states of the
// run's sessions.
func (s *eventMapper) changes(cs []sessiontree.Change, k *keptStates) {
	var now time.Time
	for _, c := range cs {
		// A delta has no use for the time; most Changes are deltas.
		if _, delta := c.(sessiontree.PartDelta); !delta && now.IsZero() {
			now = time.Now()
		}
		s.changeOf(c, now, k)
	}
}

// keptStates are the states of one run's sessions, most recent last, at
// most maxKeptStates of them (a run has few sessions streaming at once).
type keptStates struct {
	ids []string
	sts []*sessState
}

const maxKeptStates = 16

// state returns the state of sid, kept in k.
func (k *keptStates) state(f *sessionFacts, sid string) *sessState {
	for i, id := range k.ids {
		if id == sid {
			return k.sts[i]
		}
	}
	st := f.ensure(sid)
	if len(k.ids) == maxKeptStates {
		k.ids = append(k.ids[:0], k.ids[1:]...)
		k.sts = append(k.sts[:0], k.sts[1:]...)
	}
	k.ids, k.sts = append(k.ids, sid), append(k.sts, st)
	return st
}

// forget drops the state of sid from k.
func (k *keptStates) forget(sid string) {
	if i := slices.Index(k.ids, sid); i >= 0 {
		k.ids, k.sts = slices.Delete(k.ids, i, i+1), slices.Delete(k.sts, i, i+1)
	}
}

// change maps one Change under the lock of its session.
func (s *eventMapper) change(c sessiontree.Change, now time.Time) {
	s.changeOf(c, now, nil)
}

// lockState returns the state of sid, locked: from k when it keeps it
// (nil: none) and it was not dropped since (a deleted session), else
// from facts.
func (s *eventMapper) lockState(sid string, k *keptStates) *sessState {
	if k == nil {
		st := s.facts.ensure(sid)
		st.mu.Lock()
		return st
	}
	st := k.state(s.facts, sid)
	st.mu.Lock()
	if st.deleted {
		// What ensure does for a session deleted since: a new state.
		st.mu.Unlock()
		k.forget(sid)
		st = k.state(s.facts, sid)
		st.mu.Lock()
	}
	return st
}

// changeOf is change with the states that k keeps (nil: none).
func (s *eventMapper) changeOf(c sessiontree.Change, now time.Time, k *keptStates) {
	var sid string
	switch c := c.(type) {
	case sessiontree.SessionCreated:
		sid = c.Info.ID
	case sessiontree.SessionUpdated:
		sid = c.Info.ID
	case sessiontree.SessionIdle:
		sid = c.SessionID
	case sessiontree.SessionError:
		sid = c.SessionID
	case sessiontree.MessageUpdated:
		sid = c.Info.SessionID
	case sessiontree.PartUpdated:
		sid = c.Part.SessionID
	case sessiontree.PartDelta:
		sid = c.SessionID
	case sessiontree.PlanUpdated:
		sid = c.SessionID
	default:
		return
	}
	st := s.lockState(sid, k)
	defer st.mu.Unlock()
	switch c := c.(type) {
	case sessiontree.SessionCreated:
		s.sessionCreated(st, c.Info)
	case sessiontree.SessionUpdated:
		s.dirOf(c.Info)
		s.publish("session.updated", c.Info.ID, sessionInfoProps{SessionID: c.Info.ID, Info: s.wireSession(c.Info)})
		if c.Info.Status == session.StatusRunning {
			s.setBusyLocked(st, c.Info.ID)
		}
	case sessiontree.SessionIdle:
		if st.active != nil {
			// The root of a run of this server: its idle follows the
			// run's end (runs.go), once the store has its totals.
			return
		}
		s.setIdleLocked(st, c.SessionID)
	case sessiontree.SessionError:
		s.publish("session.error", c.SessionID, sessionErrorProps{SessionID: c.SessionID, Error: messageError(c.Code, c.Message)})
	case sessiontree.MessageUpdated:
		s.messageUpdated(st, c.Info, now)
	case sessiontree.PartUpdated:
		s.partUpdated(st, c.Part, now)
	case sessiontree.PartDelta:
		s.partDelta(st, c)
	case sessiontree.PlanUpdated:
		s.planUpdated(st, c)
	}
}

func (s *eventMapper) sessionCreated(st *sessState, rec session.Session) {
	s.dirOf(rec)
	s.facts.touch(st, true)
	s.publish("session.created", rec.ID, sessionInfoProps{SessionID: rec.ID, Info: s.wireSession(rec)})
	if rec.Status == session.StatusRunning {
		s.setBusyLocked(st, rec.ID)
	}
}

// messageError is the OpenCode error of a failed or aborted run. A
// failure's text is worded for the person who reads it in the client (the
// TUI shows it as a toast): a model's failure names its cause first, not
// the agent's "model test: " (spawn.ReadableError); a cancel says who
// cancelled (spawn.AbortedWords), never Go's "context canceled".
func messageError(code, msg string) any {
	if msg == "" {
		msg = code
	}
	if code == string(event.StopAborted) || isAbortText(msg) {
		return wire.MessageAbortedError{Name: "MessageAbortedError", Data: wire.ErrorData{Message: spawn.AbortedWords(msg)}}
	}
	return wire.UnknownError{Name: "UnknownError", Data: wire.ErrorData{Message: spawn.ReadableError(msg)}}
}

// isAbortText recognizes the error texts of cancelled runs.
func isAbortText(msg string) bool {
	return msg == string(event.StopAborted) || strings.HasPrefix(msg, "run cancelled") || msg == "team cancelled" ||
		msg == "parent session ended first" || strings.Contains(msg, "context canceled")
}

func (s *eventMapper) messageUpdated(st *sessState, info sessiontree.Message, now time.Time) {
	sid := info.SessionID
	t := s.facts.touch(st, true)
	dir := s.dirOfID(sid)
	agent := info.Agent
	m := t.byID[info.ID]
	if info.Role == sessiontree.RoleUser {
		if m == nil {
			m = &tmsg{user: &wire.UserMessage{ID: info.ID, SessionID: sid, Role: "user", Time: wire.UserMessageTime{Created: ms(info.Created)},
				Agent: agent, Model: s.modelOf(agent)}}
			t.add(m)
		}
		s.publish("message.updated", sid, messageProps{SessionID: sid, Info: m.user})
		return
	}
	if m == nil {
		parent := info.ParentID
		if parent == "" {
			if ar := st.active; ar != nil {
				parent = ar.userMsg
			} else {
				parent = t.lastUser()
			}
		}
		if parent == "" {
			parent = info.ID
		}
		if len(t.msgs) == 0 && st.active == nil && t.headless.IsZero() {
			// A run that goes on after a restart: its prompt and the
			// earlier runs are in the store only (history.go).
			t.headless = now
		}
		ref := refOfModelID(s.base, agent, info.ModelID)
		m = &tmsg{asst: &wire.AssistantMessage{
			ID: info.ID, SessionID: sid, Role: "assistant", ParentID: parent, ProviderID: ref.ProviderID, ModelID: ref.ModelID,
			Mode: agent, Agent: agent, Path: wire.MessagePath{Cwd: dir, Root: dir}, Time: wire.AssistantTime{Created: ms(info.Created)},
		}}
		t.add(m)
		updateAssistant(m.asst, info)
		s.publish("message.updated", sid, messageProps{SessionID: sid, Info: m.asst})
		pid := newPartID()
		t.putPart(m, pid, &wire.StepStartPart{ID: pid, SessionID: sid, MessageID: info.ID, Type: "step-start"})
		s.publish("message.part.updated", sid, partProps{SessionID: sid, Part: t.parts[pid].value(), Time: ms(now)})
		if info.Completed.IsZero() {
			return
		}
	}
	a := m.asst
	if info.ModelID != "" && info.ModelID != a.ModelID {
		a.ProviderID = refOfModelID(s.base, agent, info.ModelID).ProviderID
	}
	updateAssistant(a, info)
	if !info.Completed.IsZero() {
		a.Time.Completed = ms(info.Completed)
		a.Finish = finishReason(info, m)
		if !m.finished {
			m.finished = true
			pid := newPartID()
			t.putPart(m, pid, &wire.StepFinishPart{ID: pid, SessionID: sid, MessageID: a.ID, Type: "step-finish", Reason: a.Finish, Cost: a.Cost, Tokens: a.Tokens})
			s.publish("message.part.updated", sid, partProps{SessionID: sid, Part: t.parts[pid].value(), Time: ms(now)})
		}
	}
	s.publish("message.updated", sid, messageProps{SessionID: sid, Info: a})
}

// updateAssistant copies what a change of the projection carries.
func updateAssistant(a *wire.AssistantMessage, info sessiontree.Message) {
	if info.ModelID != "" {
		a.ModelID = info.ModelID
	}
	a.Cost = info.Cost
	a.Tokens = tokens(info.Usage.InputTokens, info.Usage.OutputTokens, info.Usage.ReasoningTokens, info.Usage.CacheReadTokens, info.Usage.CacheWriteTokens)
	if info.Error != "" {
		a.Error = messageError("", info.Error)
	}
}

// finishReason is OpenCode's (the AI SDK's) finish reason of a step.
func finishReason(info sessiontree.Message, m *tmsg) string {
	switch info.Finish {
	case "tool_calls":
		return "tool-calls"
	case "":
	default:
		return info.Finish
	}
	if info.Error != "" {
		if isAbortText(info.Error) {
			return "aborted"
		}
		return "error"
	}
	for _, p := range m.parts {
		if _, ok := p.cur.(*wire.ToolPart); ok {
			return "tool-calls"
		}
	}
	return "stop"
}

func (s *eventMapper) partUpdated(st *sessState, p sessiontree.Part, now time.Time) {
	sid := p.SessionID
	t := s.facts.touch(st, true)
	v := s.wirePart(p, now)
	m := t.byID[p.MessageID]
	if tp, ok := v.(*wire.TextPart); ok && m != nil && m.user != nil {
		tp.Time = nil // user parts carry no time (see runs.go)
	}
	if m != nil {
		publish, keep := true, true
		if prev, ok := t.parts[p.ID]; ok {
			publish, keep = toolTransition(prev.value(), v)
		}
		if keep {
			t.putPart(m, p.ID, v)
		}
		if !publish {
			return
		}
		if tp, ok := v.(*wire.TextPart); ok && m.user != nil && len(t.msgs) > 0 && t.msgs[0] == m && cutLength(tp.Text) {
			t.cutPrompt = tp
		}
	}
	s.publish("message.part.updated", sid, partProps{SessionID: sid, Part: v, Time: ms(now)})
}

// toolTransition decides whether a new state of a tool part is published
// and kept, so that clients see what OpenCode's own server sends: pending
// once (the arguments stream into the stored part only), running when
// its title or metadata change (a spawning call gains its child's
// session id), completed or error once, and never a step back from an
// end. A part that is no tool part is always published and kept.
func toolTransition(prev, next any) (publish, keep bool) {
	a, ok1 := prev.(*wire.ToolPart)
	b, ok2 := next.(*wire.ToolPart)
	if !ok1 || !ok2 {
		return true, true
	}
	from, to := toolStatus(a.State), toolStatus(b.State)
	switch {
	case from == "completed" || from == "error":
		return false, false
	case from != to:
		return true, true
	case to == "running":
		changed := !reflect.DeepEqual(a.State, b.State)
		return changed, true
	default: // a second pending
		return false, true
	}
}

// toolStatus is the status of a tool part's state.
func toolStatus(st any) string {
	switch st.(type) {
	case *wire.ToolStatePending:
		return "pending"
	case *wire.ToolStateRunning:
		return "running"
	case *wire.ToolStateCompleted:
		return "completed"
	default:
		return "error"
	}
}

// cutLength reports whether a prompt may have been cut by spawn (200
// bytes, then "...").
func cutLength(text string) bool {
	return strings.HasSuffix(text, "...") && len(text) >= 200 && len(text) <= 203
}

func (s *eventMapper) partDelta(st *sessState, d sessiontree.PartDelta) {
	if t := s.facts.touch(st, false); t != nil {
		if p, ok := t.parts[d.PartID]; ok {
			p.grow(d.Delta)
		}
	}
	s.publishDelta(st, deltaProps{SessionID: d.SessionID, MessageID: d.MessageID, PartID: d.PartID, Field: d.Field, Delta: d.Delta})
}

// wirePart converts a part of the projection. Parts are values: a later
// change replaces the part, never edits one already published.
func (s *eventMapper) wirePart(p sessiontree.Part, now time.Time) any {
	switch p.Type {
	case sessiontree.PartReasoning:
		return &wire.ReasoningPart{ID: p.ID, SessionID: p.SessionID, MessageID: p.MessageID, Type: "reasoning", Text: p.Text, Time: partTime(p, now)}
	case sessiontree.PartTool:
		v := viewTool(s.root, partCall(p), p.State.Input)
		if p.Child() != "" && v.tool != "task" {
			v = asTask(v, p.Tool, p.State.Input)
		}
		return &wire.ToolPart{ID: p.ID, SessionID: p.SessionID, MessageID: p.MessageID, Type: "tool", CallID: p.CallID, Tool: v.tool, State: toolState(p, v, now)}
	default:
		pt := partTime(p, now)
		return &wire.TextPart{ID: p.ID, SessionID: p.SessionID, MessageID: p.MessageID, Type: "text", Text: p.Text, Time: &pt}
	}
}

func partTime(p sessiontree.Part, now time.Time) wire.PartTime {
	t := wire.PartTime{Start: ms(p.Start), End: ms(p.End)}
	if t.Start == 0 {
		t.Start = ms(now)
	}
	return t
}

// toolState converts a tool part's state, with the name, input, title
// and metadata of its OpenCode view (tools.go). A part that ran a child
// session completes with the child's output (the text of the spawning
// tool's {output, session_id} result).
func toolState(p sessiontree.Part, v toolView, now time.Time) any {
	st := p.State
	input := v.input
	start := ms(st.Start)
	if start == 0 {
		start = ms(now)
	}
	end := ms(st.End)
	if end == 0 {
		end = ms(now)
	}
	meta := withMeta(v.meta, st.Metadata)
	switch st.Status {
	case sessiontree.ToolPending:
		return &wire.ToolStatePending{Status: "pending", Input: input, Raw: st.Raw}
	case sessiontree.ToolRunning:
		return &wire.ToolStateRunning{Status: "running", Input: input, Title: v.title, Metadata: meta, Time: wire.ToolTimeStart{Start: start}}
	case sessiontree.ToolCompleted:
		out := st.Output
		if p.Child() != "" {
			out = childOutput(out)
		}
		title := v.title
		if title == "" {
			title = v.tool
		}
		if meta == nil {
			meta = map[string]any{}
		}
		return &wire.ToolStateCompleted{Status: "completed", Input: input, Output: out, Title: title, Metadata: meta, Time: wire.ToolTime{Start: start, End: end}}
	default:
		msg := st.Error
		if p.Child() != "" {
			msg = childError(msg)
		}
		if msg == "" {
			msg = "tool call failed"
		}
		return &wire.ToolStateError{Status: "error", Input: input, Error: msg, Metadata: meta, Time: wire.ToolTime{Start: start, End: end}}
	}
}

// withMeta is the tool's metadata with the keys of link (a spawning part's
// sessionId, parentSessionId, ...) set over it; nil when both are empty.
func withMeta(tool, link map[string]any) map[string]any {
	if len(link) == 0 {
		return tool
	}
	out := maps.Clone(tool)
	if out == nil {
		out = make(map[string]any, len(link))
	}
	maps.Copy(out, link)
	return out
}

// objectJSON returns raw when it is a JSON object, else {}.
func objectJSON(raw json.RawMessage) json.RawMessage {
	b := strings.TrimSpace(string(raw))
	if strings.HasPrefix(b, "{") && json.Valid([]byte(b)) {
		return json.RawMessage(b)
	}
	return json.RawMessage("{}")
}

// withSubagentType adds subagent_type (OpenCode's name of the agent
// argument) to a task call's input that names agent_or_team.
func withSubagentType(input json.RawMessage) json.RawMessage {
	var m map[string]any
	if json.Unmarshal(input, &m) != nil {
		return input
	}
	if _, ok := m["subagent_type"]; ok {
		return input
	}
	a, ok := m["agent_or_team"].(string)
	if !ok {
		return input
	}
	m["subagent_type"] = a
	b, err := json.Marshal(m)
	if err != nil {
		return input
	}
	return b
}

// childOutput is the text a person reads for a spawning tool's result
// (the child's answer, or why it did not finish: spawn.ReadableResult);
// other text is returned as is.
func childOutput(result string) string {
	text, _, _, _ := spawn.ReadableResult(result)
	return text
}

// childError is the error of a part that ran a child session in words: the
// readable result when it is one, else the child's error as the person
// reads it ("Failed: <cause> (model ID)", "Cancelled by the user."), not
// the agent's "model ID: cause" or Go's "context canceled".
func childError(msg string) string {
	if text, _, _, ok := spawn.ReadableResult(msg); ok {
		return text
	}
	if isAbortText(msg) {
		return spawn.AbortedWords(msg)
	}
	why := spawn.ReadableError(msg)
	switch {
	case why == "" || strings.HasPrefix(why, "Failed: ") || strings.HasPrefix(why, "Cancelled ") || strings.HasPrefix(why, "Stopped "):
		return msg
	case !strings.ContainsAny(why, " :"): // a bare stop reason
		return "Failed: the child session ended with " + why
	}
	return "Failed: " + why
}
