package sessiontree

import (
	"encoding/json"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/id"
	"github.com/agentpool/agentpool/session"
)

// The messages and parts of a session's projection: one assistant message
// per model response, its text, reasoning and tool parts.

func (a *applier) openMessage(s *sess, modelID string) *message {
	if s.msg != nil {
		a.closeMessage(s, "")
	}
	if modelID == "" {
		modelID = s.model
	}
	m := &message{info: Message{ID: id.Ascending(id.Message), SessionID: s.rec.ID, Role: RoleAssistant, ParentID: s.userMsg,
		Agent: s.rec.AgentName, ModelID: modelID, Created: a.clock()}, last: -1}
	s.msg = m
	if a.want {
		a.emit(MessageUpdated{Info: m.info})
	}
	return m
}

func (a *applier) ensureMessage(s *sess) *message {
	if s.msg != nil {
		return s.msg
	}
	return a.openMessage(s, "")
}

// closeMessage completes the open message; text parts still open end.
func (a *applier) closeMessage(s *sess, errText string) {
	m := s.msg
	if m == nil {
		return
	}
	for _, pt := range m.parts {
		if pt.Type != PartTool && pt.End.IsZero() {
			pt.End = a.clock()
			if a.want {
				a.emit(PartUpdated{Part: pt.snapshot()})
			}
		}
	}
	if errText != "" && m.info.Error == "" {
		m.info.Error = errText
	}
	m.info.Completed = a.clock()
	if a.want {
		a.emit(MessageUpdated{Info: m.info})
	}
	s.msg = nil
}

func (a *applier) newPart(s *sess, m *message, t PartType) *part {
	pt := &part{Part: Part{ID: id.Ascending(id.Part), SessionID: s.rec.ID, MessageID: m.info.ID, Type: t, Start: a.clock()}}
	m.parts = append(m.parts, pt)
	return pt
}

func (a *applier) setStatus(s *sess, st session.Status) {
	if s.rec.Status == st {
		return
	}
	s.rec.Status = st
	s.rec.UpdatedAt = a.clock()
	if a.want {
		a.emit(SessionUpdated{Info: s.info()})
	}
}

func (a *applier) runStarted(s *sess, ev event.RunStarted) {
	if s.ended {
		// A new run of a session that ended (a resumed session).
		s.ended, s.errored = false, false
		if s.parent != nil {
			s.parent.addKid(s.rec.ID, s)
		}
	}
	if s.rec.AgentName == "" {
		s.rec.AgentName = ev.AgentName
	}
	s.errored = false
	s.model = ev.Model
	if s.parent == nil {
		s.rec.StopReason = ""
		s.rec.Status = ""
	}
	a.setStatus(s, session.StatusRunning)
}

// partKind maps an event part kind to a projection part type.
func partKind(k string) PartType {
	switch k {
	case event.PartThinking:
		return PartReasoning
	case event.PartToolCall:
		return PartTool
	}
	return PartText
}

func (a *applier) partStart(s *sess, ev event.PartStart) {
	m := s.msg
	if m == nil || ev.Index <= m.last {
		// Part indexes start again at 0 with each model response: a new
		// assistant message (a new step).
		modelID := ""
		if m != nil {
			modelID = m.info.ModelID
		}
		m = a.openMessage(s, modelID)
	}
	m.last = ev.Index
	pt := a.newPart(s, m, partKind(ev.Part.PartKind))
	m.setPart(ev.Index, pt)
	if pt.Type == PartTool {
		pt.CallID, pt.Tool = ev.Part.ToolCallID, ev.Part.ToolName
		pt.State = ToolState{Status: ToolPending, Input: json.RawMessage("{}")}
		pt.raw.WriteString(ev.Part.Args)
		if pt.CallID != "" {
			s.addTool(pt.CallID, pt)
		}
	} else {
		pt.text.WriteString(ev.Part.Content)
	}
	if a.want {
		a.emit(PartUpdated{Part: pt.snapshot()})
	}
}

func (a *applier) partDelta(s *sess, ev event.PartDelta) {
	m := a.ensureMessage(s)
	pt, ok := m.part(ev.Index)
	if !ok {
		// A delta without its start: open the part now.
		a.partStart(s, event.PartStart{Index: ev.Index, Part: event.Part{PartKind: ev.Delta.PartDeltaKind, ToolCallID: ev.Delta.ToolCallID}})
		m = s.msg
		if pt, ok = m.part(ev.Index); !ok {
			return // an index out of any sane range: nothing to extend
		}
	}
	if pt.Type == PartTool {
		if ev.Delta.ArgsDelta == "" {
			return
		}
		pt.raw.WriteString(ev.Delta.ArgsDelta)
		if a.want {
			a.emit(PartUpdated{Part: pt.snapshot()})
		}
		return
	}
	if ev.Delta.ContentDelta == "" {
		return
	}
	pt.text.WriteString(ev.Delta.ContentDelta)
	if a.want {
		a.emit(PartDelta{SessionID: s.rec.ID, MessageID: pt.MessageID, PartID: pt.ID, Field: "text", Delta: ev.Delta.ContentDelta})
	}
}

func (a *applier) partEnd(s *sess, ev event.PartEnd) {
	if s.msg == nil {
		return
	}
	pt, ok := s.msg.part(ev.Index)
	if !ok {
		return
	}
	if pt.Type == PartTool {
		if raw := pt.raw.String(); json.Valid([]byte(raw)) {
			pt.State.Input = json.RawMessage(raw)
		}
	} else {
		pt.End = a.clock()
	}
	if a.want {
		a.emit(PartUpdated{Part: pt.snapshot()})
	}
}

// toolPart finds the tool part of a call, creating it when the stream
// never announced it.
func (a *applier) toolPart(s *sess, callID, name string) *part {
	if pt, ok := s.tools[callID]; ok {
		return pt
	}
	pt := a.newPart(s, a.ensureMessage(s), PartTool)
	pt.CallID, pt.Tool = callID, name
	pt.State = ToolState{Status: ToolPending, Input: json.RawMessage("{}")}
	s.addTool(callID, pt)
	return pt
}

func (a *applier) toolStart(s *sess, ev event.ToolCallStart) {
	pt := a.toolPart(s, ev.ToolCallID, ev.ToolName)
	if !pt.open() {
		return
	}
	pt.State.Status = ToolRunning
	if len(ev.RawInput) > 0 {
		pt.State.Input = append(json.RawMessage(nil), ev.RawInput...)
	}
	pt.State.Title = ev.Title
	if len(ev.Locations) > 0 {
		pt.State.Locations = ev.Locations
	}
	if pt.State.Start.IsZero() {
		pt.State.Start = a.clock()
	}
	if a.want {
		a.emit(PartUpdated{Part: pt.snapshot()})
	}
}

func (a *applier) toolProgress(s *sess, ev event.ToolCallProgress) {
	pt, ok := s.tools[ev.ToolCallID]
	if !ok || !pt.open() {
		return
	}
	if ev.Title != "" {
		pt.State.Title = ev.Title
	}
	if ev.Status == event.StatusInProgress && pt.State.Status == ToolPending {
		pt.State.Status, pt.State.Start = ToolRunning, a.clock()
	}
	if a.want {
		a.emit(PartUpdated{Part: pt.snapshot()})
	}
}

func (a *applier) toolComplete(s *sess, ev event.ToolCallComplete) {
	pt := a.toolPart(s, ev.ToolCallID, ev.ToolName)
	if len(ev.ToolInput) > 0 {
		pt.State.Input = append(json.RawMessage(nil), ev.ToolInput...)
	}
	if pt.State.Start.IsZero() {
		pt.State.Start = a.clock()
	}
	if ev.IsError {
		pt.State.Status, pt.State.Error, pt.State.Output = ToolError, ev.ToolResult, ""
	} else {
		pt.State.Status, pt.State.Output, pt.State.Error = ToolCompleted, ev.ToolResult, ""
	}
	if pt.State.Title == "" {
		pt.State.Title = ev.ToolName
	}
	toolReport(&pt.State, ev)
	pt.State.End = a.clock()
	delete(s.tools, ev.ToolCallID)
	if a.want {
		a.emit(PartUpdated{Part: pt.snapshot()})
	}
}
