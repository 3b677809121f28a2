package sessiontree

import (
	"encoding/json"
	"errors"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/id"
	"github.com/agentpool/agentpool/session"
)

// How the projection finds the session an event belongs to, and creates
// sessions: roots when their run's first event comes, children at their
// spawn_session_start or through the reactive fallback.

// apply projects one event.
func (a *applier) apply(e event.Event) {
	sid, inner := event.Unwrap(a.owner, e)
	var wrap *event.Subagent
	if w, ok := e.(event.Subagent); ok {
		wrap = &w
		if inner == nil {
			a.p.log.Warn("sessiontree: subagent event wraps nothing", "owner", a.owner, "child", sid)
			return
		}
	}
	if sid == "" {
		a.p.log.Warn("sessiontree: event without a session", "kind", e.Kind())
		return
	}
	if _, live := a.r.sessions[sid]; !live && a.p.isDone(sid) {
		if sid != a.owner {
			// A late or replayed event of a child whose run already ended
			// (its log keeps it): it changes nothing in the projection.
			a.p.log.Debug("sessiontree: event of an ended child", "child", sid, "kind", inner.Kind())
			return
		}
		// A session that ran as a child, now continued as a root run of
		// its own (a resumed session): a new run, projected afresh.
		a.p.undo(sid)
	}
	s := a.session(sid, wrap)
	switch ev := inner.(type) {
	case event.RunStarted:
		a.runStarted(s, ev)
	case event.PartStart:
		a.partStart(s, ev)
	case event.PartDelta:
		a.partDelta(s, ev)
	case event.PartEnd:
		a.partEnd(s, ev)
	case event.ToolCallStart:
		a.toolStart(s, ev)
	case event.ToolCallProgress:
		a.toolProgress(s, ev)
	case event.ToolCallComplete:
		a.toolComplete(s, ev)
	case event.PlanUpdate:
		a.planUpdate(s, ev)
	case event.StreamComplete:
		a.streamComplete(s, ev)
	case event.RunError:
		a.runError(s, ev)
	case event.SpawnSessionStart:
		a.spawnStart(s, ev)
	case event.SpawnSessionEnd:
		a.spawnEnd(s, ev)
	case event.Custom:
		if ev.EventType == eventSessionMessage {
			a.sessionMessage(s, ev)
		}
	}
}

// session returns the projection of sid, creating it when first seen: a
// root from the store (or new), a child through the reactive fallback.
func (a *applier) session(sid string, wrap *event.Subagent) *sess {
	if s, ok := a.r.sessions[sid]; ok {
		return s
	}
	if sid == a.owner || wrap == nil {
		return a.root(sid)
	}
	a.p.log.Warn("sessiontree: event of a child without spawn_session_start; creating it (reactive fallback)",
		"owner", a.owner, "child", sid, "kind", wrap.Event.Kind())
	parent := a.session(a.owner, nil)
	path := wrap.Path
	if len(path) == 0 || path[len(path)-1] != sid {
		path = []string{sid}
		if pp, ok := a.r.sessions[wrap.ParentSessionID]; ok {
			parent = pp
		}
	}
	for _, cid := range path {
		if c, ok := a.r.sessions[cid]; ok {
			parent = c
			continue
		}
		info := spawnInfo{child: cid, depth: parent.rec.Depth + 1, mechanism: event.MechanismManual, runMode: event.RunModeSync}
		if cid == sid {
			info.sourceName, info.sourceType, info.depth, info.toolCallID = wrap.SourceName, wrap.SourceType, wrap.Depth, wrap.ToolCallID
		}
		parent = a.createChild(parent, info)
	}
	return parent
}

// root loads a root session from the store, or makes its record when the
// store does not have it.
func (a *applier) root(sid string) *sess {
	s := &sess{}
	a.add(sid, s)
	if st := a.p.store; st != nil {
		rec, err := st.GetSession(a.ctx, sid)
		if err == nil {
			s.rec = rec
			return s
		}
		if !errors.Is(err, session.ErrNotFound) {
			a.p.log.Warn("sessiontree: load session", "session", sid, "err", err)
		}
	}
	s.rec = session.Session{ID: sid, Status: session.StatusRunning, SourceType: event.SourceAgent, CreatedAt: a.clock(), UpdatedAt: a.clock()}
	if a.want {
		a.emit(SessionCreated{Info: s.info()})
	}
	return s
}

// createChild adds a child session to the projection, with its record from
// the store (else the one spawn.Spawn would have written), its prompt, an
// open assistant message and the part in the parent that points at it.
func (a *applier) createChild(parent *sess, info spawnInfo) *sess {
	c := &sess{parent: parent}
	a.add(info.child, c)
	parent.addKid(info.child, c)
	var rec session.Session
	found := false
	if st := a.p.store; st != nil {
		r, err := st.GetSession(a.ctx, info.child)
		switch {
		case err == nil:
			rec, found = r, true
		case !errors.Is(err, session.ErrNotFound):
			a.p.log.Warn("sessiontree: load session", "session", info.child, "err", err)
		}
	}
	if !found {
		rec = session.ChildRecord(event.SpawnSessionStart{ChildSessionID: info.child, ParentSessionID: parent.rec.ID,
			SourceName: info.sourceName, SourceType: info.sourceType, Description: info.description, Depth: info.depth}, a.clock())
	}
	c.rec = rec
	if a.want {
		a.emit(SessionCreated{Info: c.info()})
	}
	if info.prompt != "" {
		a.userMessage(c, info.prompt)
	}
	a.openMessage(c, info.modelID)
	a.link(parent, c, info)
	return c
}

// userMessage adds a user message with text to s: the prompt of a child,
// a message sent to a running session.
func (a *applier) userMessage(s *sess, text string) {
	um := Message{ID: id.Ascending(id.Message), SessionID: s.rec.ID, Role: RoleUser, Agent: s.rec.AgentName, Created: a.clock(), Completed: a.clock()}
	s.userMsg = um.ID
	if a.want {
		a.emit(MessageUpdated{Info: um})
	}
	pt := &part{Part: Part{ID: id.Ascending(id.Part), SessionID: s.rec.ID, MessageID: um.ID, Type: PartText, Start: a.clock(), End: a.clock()}}
	pt.text.WriteString(text)
	if a.want {
		a.emit(PartUpdated{Part: pt.snapshot()})
	}
}

// sessionMessage shows a message delivered to a running session (the
// custom event spawn.EventSessionMessage) as a user message between the
// model responses before and after it.
func (a *applier) sessionMessage(s *sess, ev event.Custom) {
	text, _ := ev.EventData["text"].(string)
	modelID := ""
	if s.msg != nil {
		modelID = s.msg.info.ModelID
	}
	a.closeMessage(s, "")
	a.userMessage(s, text)
	a.openMessage(s, modelID)
}

// resumeChild projects the start of a finished child continued in its
// session (spawn.Resume; metadata "resumed"): a child ended in this run
// runs again, one ended in an earlier run is projected afresh.
func (a *applier) resumeChild(parent *sess, info spawnInfo) {
	c, ok := a.r.sessions[info.child]
	if !ok {
		if !a.p.undo(info.child) {
			return // another run's, in progress: not this run's to project
		}
		a.createChild(parent, info)
		return
	}
	if !c.ended {
		return
	}
	c.ended, c.errored = false, false
	parent.addKid(info.child, c)
	c.rec.StopReason = ""
	a.setStatus(c, session.StatusRunning)
	if info.prompt != "" {
		a.userMessage(c, info.prompt)
	}
	a.openMessage(c, info.modelID)
	a.link(parent, c, info)
}

// link points a tool part of the parent at child c: the tool call that
// spawned it when there is one, else a new task-like part.
func (a *applier) link(parent, c *sess, info spawnInfo) {
	var pt *part
	if info.toolCallID != "" {
		if t, ok := parent.tools[info.toolCallID]; ok && t.open() && t.Child() == "" {
			pt = t
		}
	}
	if pt == nil {
		m := a.ensureMessage(parent)
		input, _ := json.Marshal(map[string]string{"description": info.description, "prompt": info.prompt, "subagent_type": info.sourceName})
		title := info.description
		if title == "" {
			title = info.sourceName
		}
		pt = a.newPart(parent, m, PartTool)
		pt.CallID, pt.Tool = "spawn:"+c.rec.ID, "task"
		pt.State = ToolState{Status: ToolRunning, Input: input, Title: title, Start: a.clock()}
		parent.addTool(pt.CallID, pt)
	} else if pt.State.Status == ToolPending {
		pt.State.Status, pt.State.Start = ToolRunning, a.clock()
	}
	meta := map[string]any{"sessionId": c.rec.ID, "parentSessionId": parent.rec.ID}
	if info.mechanism != "" {
		meta["spawnMechanism"] = string(info.mechanism)
	}
	if info.runMode != "" {
		meta["runMode"] = string(info.runMode)
	}
	if info.taskID != "" {
		meta["taskId"] = info.taskID
	}
	for k, v := range pt.State.Metadata {
		if _, set := meta[k]; !set {
			meta[k] = v
		}
	}
	pt.State.Metadata = meta
	c.link = pt
	if a.want {
		a.emit(PartUpdated{Part: pt.snapshot()})
	}
}

func (a *applier) spawnStart(parent *sess, ev event.SpawnSessionStart) {
	if ev.ChildSessionID == "" {
		return
	}
	prompt, _ := ev.Metadata["prompt"].(string)
	info := spawnInfo{
		child: ev.ChildSessionID, toolCallID: ev.ToolCallID, mechanism: ev.SpawnMechanism, runMode: ev.RunMode,
		sourceName: ev.SourceName, sourceType: ev.SourceType, description: ev.Description, prompt: prompt,
		modelID: ev.ModelID, taskID: ev.TaskID, depth: ev.Depth,
	}
	if ev.Metadata[metaResumed] != nil {
		a.resumeChild(parent, info)
		return
	}
	// Seen in this run, in another run in progress, or ended.
	_, seen := a.r.sessions[ev.ChildSessionID]
	if !seen {
		_, seen = a.p.index.Load(ev.ChildSessionID)
	}
	if seen || a.p.isDone(ev.ChildSessionID) {
		a.p.log.Debug("sessiontree: duplicate spawn_session_start ignored", "child", ev.ChildSessionID)
		return
	}
	a.createChild(parent, info)
}

// metaResumed is spawn.MetaResumed (the processor does not import spawn).
const metaResumed = "resumed"

// eventSessionMessage is spawn.EventSessionMessage.
const eventSessionMessage = "session_message"

func (a *applier) spawnEnd(parent *sess, ev event.SpawnSessionEnd) {
	c, ok := a.r.sessions[ev.ChildSessionID]
	if !ok {
		if ev.ChildSessionID == "" || a.p.isDone(ev.ChildSessionID) {
			return
		}
		a.p.log.Warn("sessiontree: spawn_session_end of a child without spawn_session_start; creating it (reactive fallback)",
			"owner", a.owner, "child", ev.ChildSessionID)
		c = a.createChild(parent, spawnInfo{child: ev.ChildSessionID, toolCallID: ev.ToolCallID, sourceName: ev.SourceName,
			sourceType: ev.SourceType, depth: ev.Depth})
	}
	if c.ended {
		a.p.log.Debug("sessiontree: duplicate spawn_session_end ignored", "child", ev.ChildSessionID)
		return
	}
	a.finish(c, session.EndingOf(ev))
}
