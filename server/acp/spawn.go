// Child sessions in the converter: the spawn tool call that shows each child,
// its progress transcript and its end.

package acp

import (
	"encoding/json"
	"github.com/agentpool/agentpool/spawn"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentpool/agentpool/event"
)

// spawnToolCallPrefix starts the tool call id of the tool call that shows a
// child session: "spawn:<child_session_id>".
const spawnToolCallPrefix = "spawn:"

// maxTranscript bounds the progress text kept for one child's spawn tool
// call (a tool_call_update replaces the whole content, so it is resent).
const maxTranscript = 8 << 10

type spawnState struct {
	child, parent, toolCallID string
	name, desc                string
	sourceType                event.SourceType
	depth                     int
	transcript                []byte
	truncated                 bool
	dirty                     bool
	lastFlush                 time.Time
	closed                    bool
	// card is the spawn tool_call as announced: an approval asked on
	// this card is undone with it.
	card toolCallUpdate
	// calls are the child's tool calls that started and have not
	// completed, by id: an approval of one names its title and kind.
	calls map[string]childCall
}

// childCall is a running tool call of a child, as its tool_call_start
// described it.
type childCall struct {
	title, kind string
}

// child handles an event that a descendant produced.
func (c *converter) child(s event.Subagent) {
	st := c.spawns[s.ChildSessionID]
	if st == nil {
		// Reactive fallback (spec/EVENTS.md §6): content of a child whose
		// start was not seen. Announce it first so that ordering holds.
		c.log.Warn("acp: event of an unannounced child session", "child", s.ChildSessionID, "kind", s.Event.Kind())
		c.spawnStart(event.SpawnSessionStart{
			ChildSessionID: s.ChildSessionID, ParentSessionID: s.ParentSessionID, ToolCallID: s.ToolCallID,
			SourceName: s.SourceName, SourceType: s.SourceType, Depth: s.Depth,
		})
		st = c.spawns[s.ChildSessionID]
	}
	switch v := s.Event.(type) {
	case event.SpawnSessionStart:
		c.spawnStart(v)
		c.note(st, "→ spawned "+v.SourceName)
		return
	case event.SpawnSessionEnd:
		c.spawnEnd(v)
		return
	}
	if st.closed {
		c.log.Warn("acp: event of a child session after its end", "child", st.child, "kind", s.Event.Kind())
		return
	}
	c.progress(st, s.Event)
	if c.subagents {
		c.own(st.child, s.Event)
	}
}

func (c *converter) spawnStart(v event.SpawnSessionStart) {
	if st, dup := c.spawns[v.ChildSessionID]; dup {
		if st.closed && v.Metadata[spawn.MetaResumed] != nil {
			c.resume(st, v)
		}
		return // duplicate guard
	}
	desc := v.Description
	if desc == "" {
		if p, ok := v.Metadata["prompt"].(string); ok {
			desc = p
		}
	}
	if desc == "" {
		desc = "Run " + v.SourceName
	}
	st := &spawnState{
		child: v.ChildSessionID, parent: v.ParentSessionID, toolCallID: v.ToolCallID,
		name: v.SourceName, sourceType: v.SourceType, desc: desc, depth: v.Depth, lastFlush: c.now(),
	}
	c.spawns[v.ChildSessionID] = st
	c.order = append(c.order, v.ChildSessionID)
	if c.onSpawn != nil {
		c.onSpawn(v.ChildSessionID)
	}
	meta := map[string]any{
		"type":              "spawn_start",
		"child_session_id":  v.ChildSessionID,
		"parent_session_id": v.ParentSessionID,
		"spawn_mechanism":   string(v.SpawnMechanism),
		"run_mode":          string(v.RunMode),
		"source_name":       v.SourceName,
		"source_type":       string(v.SourceType),
		"depth":             v.Depth,
	}
	if v.ToolCallID != "" {
		meta["tool_call_id"] = v.ToolCallID
	}
	if v.TaskID != "" {
		meta["task_id"] = v.TaskID
	}
	input := map[string]any{"agent_or_team": v.SourceName}
	if v.Description != "" {
		input["description"] = v.Description
	}
	if p, ok := v.Metadata["prompt"].(string); ok && p != "" {
		input["prompt"] = p
	}
	raw, _ := json.Marshal(input)
	st.card = toolCallUpdate{
		SessionUpdate: updateToolCall, ToolCallID: spawnToolCallPrefix + v.ChildSessionID,
		Title: "Spawned: " + v.SourceName, Kind: "other", Status: statusInProgress,
		Content: []toolCallContent{textContent(desc)}, RawInput: raw,
		Meta: map[string]any{"agentpool": meta},
	}
	c.send(c.root, st.card)
	if c.subagents {
		c.send(v.ParentSessionID, subagentUpdate{
			SessionUpdate: updateSubagent, SessionID: v.ChildSessionID, Title: v.SourceName, Description: desc,
			State: &subagentState{State: "running"},
			Meta:  map[string]any{"agentpool": meta},
		})
	}
}

// resume reopens the card of a finished child that its parent continued
// in its session (spawn.Resume): in progress again, the new prompt noted
// in its transcript; its end closes it again.
func (c *converter) resume(st *spawnState, v event.SpawnSessionStart) {
	st.closed = false
	prompt, _ := v.Metadata["prompt"].(string)
	c.send(c.root, toolCallUpdate{SessionUpdate: updateToolCallUpdate, ToolCallID: spawnToolCallPrefix + st.child, Status: statusInProgress})
	c.note(st, "← continued: "+prompt)
	if c.subagents {
		c.send(st.parent, subagentUpdate{SessionUpdate: updateSubagent, SessionID: st.child, State: &subagentState{State: "running"}})
	}
}

func (c *converter) spawnEnd(v event.SpawnSessionEnd) {
	st := c.spawns[v.ChildSessionID]
	if st == nil {
		c.log.Warn("acp: end of an unannounced child session", "child", v.ChildSessionID)
		c.spawnStart(event.SpawnSessionStart{
			ChildSessionID: v.ChildSessionID, ParentSessionID: v.ParentSessionID, ToolCallID: v.ToolCallID,
			SourceName: v.SourceName, SourceType: v.SourceType, Depth: v.Depth,
		})
		st = c.spawns[v.ChildSessionID]
	}
	if st.closed {
		return
	}
	st.closed = true
	c.closeTools(st.child)

	status := statusFailed
	switch v.StopReason {
	case event.StopCompleted, event.StopMaxTokens, event.StopRefusal:
		status = statusCompleted
	}
	// The content is what a person reads: the child's answer, or why it
	// did not finish, in words. The description is the call's title
	// already, and the machine fields (session, stop reason, duration,
	// usage) are in _meta.agentpool, not in rawOutput, so that no client
	// shows the answer twice.
	out := v.LastAssistantMessage
	switch {
	case v.StopReason == event.StopAborted:
		out = joinNonEmpty(out, spawn.AbortedWords(v.Error))
	case status == statusFailed:
		why := spawn.ReadableError(v.Error)
		if why == "" {
			why = "the child session ended with " + string(v.StopReason)
		}
		out = joinNonEmpty(out, "Failed: "+why)
	}
	var content []toolCallContent
	if out != "" {
		content = append(content, textContent(out))
	}
	meta := map[string]any{
		"type": "spawn_end", "child_session_id": v.ChildSessionID, "parent_session_id": v.ParentSessionID,
		"source_name": v.SourceName, "depth": v.Depth, "stop_reason": string(v.StopReason), "duration_ms": v.DurationMS,
	}
	if v.Error != "" {
		meta["error"] = v.Error
	}
	if v.Usage != nil {
		meta["usage"] = v.Usage
	}
	if v.Cost != 0 {
		meta["cost"] = v.Cost
	}
	if v.ToolCallID != "" {
		meta["tool_call_id"] = v.ToolCallID
	}
	end := toolCallUpdate{
		SessionUpdate: updateToolCallUpdate, ToolCallID: spawnToolCallPrefix + v.ChildSessionID,
		Status: status, Content: content, Meta: map[string]any{"agentpool": meta},
	}
	if c.asking[end.ToolCallID] > 0 {
		// It ends while an approval is shown on it: what it showed before.
		end.Title, end.Kind, end.RawInput = st.card.Title, st.card.Kind, st.card.RawInput
	}
	c.send(c.root, end)
	if c.subagents {
		state := &subagentState{State: "idle", StopReason: acpStopReason(v.StopReason)}
		if state.StopReason == "error" && v.Error != "" {
			state.Error = &rpcError{Code: codeInternalError, Message: v.Error}
		}
		c.send(v.ParentSessionID, subagentUpdate{SessionUpdate: updateSubagent, SessionID: v.ChildSessionID, State: state})
	}
}

// progress adds a child's own event to the progress shown in its spawn
// tool call.
func (c *converter) progress(st *spawnState, e event.Event) {
	switch v := e.(type) {
	case event.PartDelta:
		if v.Delta.PartDeltaKind != event.PartText || v.Delta.ContentDelta == "" {
			return
		}
		c.appendTranscript(st, v.Delta.ContentDelta)
		if c.interval > 0 && c.now().Sub(st.lastFlush) >= c.interval {
			c.flush(st)
		}
	case event.PartEnd:
		if st.dirty {
			c.appendTranscript(st, "\n")
			c.flush(st)
		}
	case event.ToolCallStart:
		title := v.Title
		if title == "" {
			title = v.ToolName
		}
		if st.calls == nil {
			st.calls = map[string]childCall{}
		}
		st.calls[v.ToolCallID] = childCall{title: title, kind: toolKind(v.ToolKind)}
		c.note(st, "→ "+title)
	case event.Custom:
		if v.EventType == spawn.EventSessionMessage {
			text, _ := v.EventData["text"].(string)
			c.note(st, "← message: "+text)
		}
	case event.ToolCallComplete:
		delete(st.calls, v.ToolCallID)
		if v.IsError {
			msg, _, _ := strings.Cut(v.ToolResult, "\n")
			c.note(st, "✗ "+v.ToolName+": "+msg)
		}
		if term := terminalID(v.Metadata); term != "" && c.terms != nil && !c.subagents {
			c.terms.shown(term) // never shown on its own (own() does it for subagents clients)
		}
	}
}

func (c *converter) note(st *spawnState, line string) {
	if st.closed {
		return
	}
	if n := len(st.transcript); n > 0 && st.transcript[n-1] != '\n' {
		c.appendTranscript(st, "\n")
	}
	c.appendTranscript(st, line+"\n")
	c.flush(st)
}

func (c *converter) appendTranscript(st *spawnState, s string) {
	st.transcript = append(st.transcript, s...)
	st.dirty = true
	if len(st.transcript) > maxTranscript {
		cut := len(st.transcript) - maxTranscript
		for cut < len(st.transcript) && !utf8.RuneStart(st.transcript[cut]) {
			cut++
		}
		st.transcript = append(st.transcript[:0], st.transcript[cut:]...)
		st.truncated = true
	}
}

func (c *converter) flush(st *spawnState) {
	st.dirty = false
	st.lastFlush = c.now()
	c.send(c.root, toolCallUpdate{
		SessionUpdate: updateToolCallUpdate, ToolCallID: spawnToolCallPrefix + st.child,
		Content: st.content(),
	})
}

// content is what the spawn tool call shows while the child runs: its
// description and its progress transcript.
func (st *spawnState) content() []toolCallContent {
	text := strings.TrimRight(string(st.transcript), "\n")
	if text == "" {
		return []toolCallContent{textContent(st.desc)}
	}
	if st.truncated {
		text = "…" + text
	}
	return []toolCallContent{textContent(st.desc), textContent(text)}
}
