// Child sessions in the converter: the spawn tool call that shows each child,
// its progress transcript and its end.

package acp

import (
	"bytes"
	"encoding/json"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/spawn"
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

	// owner is the child whose card shows this one: itself, or (flat
	// view) the child of the root session it descends from, whose
	// transcript has this one's progress nested, indented by depth.
	owner *spawnState
	// cardID is the toolCallId of owner's card: "spawn:<child>", or
	// (flat) the root's tool call that started the child.
	cardID string
	// inTool: the card is the root's delegating tool call (flat), which
	// ends when both the tool and the child are done.
	inTool bool
	// line is a nested child's text not yet ended by a newline or its
	// part's end (flat): only whole lines go into the owner's transcript,
	// so that children running side by side do not interleave mid-line.
	line []byte
	// The delegation's two ends (inTool): the tool's result, and the
	// child's end as the card's last update shows it.
	toolDone, toolFailed, childDone, toolFirst bool
	toolResult, childOut                       string
	childStatus                                string
	endMeta                                    map[string]any
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
	st.owner, st.cardID = st, spawnToolCallPrefix+v.ChildSessionID
	c.spawns[v.ChildSessionID] = st
	c.order = append(c.order, v.ChildSessionID)
	if c.onSpawn != nil {
		c.onSpawn(v.ChildSessionID)
	}
	if c.flat {
		if p := c.spawns[v.ParentSessionID]; p != nil {
			// A descendant: nested in its ancestor's card.
			st.owner, st.cardID = p.owner, p.owner.cardID
			return
		}
		if other := c.cards[v.ToolCallID]; other != nil && !other.closed {
			// A second child of one tool call: nested in the first's.
			st.owner, st.cardID = other, other.cardID
			return
		}
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
	if t := c.tools[c.root+"\x00"+v.ToolCallID]; c.flat && v.ToolCallID != "" && v.ParentSessionID == c.root && t != nil {
		// The delegation's own tool call shows the child: in progress
		// now, its description and progress as content.
		st.cardID, st.inTool = v.ToolCallID, true
		c.cards[v.ToolCallID] = st
		st.card = toolCallUpdate{
			SessionUpdate: updateToolCallUpdate, ToolCallID: v.ToolCallID, Title: t.title, Kind: t.kind,
			Status: statusInProgress, Content: []toolCallContent{textContent(desc)}, RawInput: t.input,
			Meta: map[string]any{"agentpool": meta},
		}
		c.send(c.root, st.card)
		return
	}
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
	if st.owner != st {
		c.note(st, "← continued: "+prompt)
		return
	}
	if t := c.tools[c.root+"\x00"+v.ToolCallID]; st.inTool && t != nil && c.cards[v.ToolCallID] == nil {
		// Continued by another tool call of the root: that one shows it.
		delete(c.cards, st.cardID)
		st.cardID, st.toolCallID = v.ToolCallID, v.ToolCallID
		st.toolDone, st.toolFailed, st.childDone, st.toolFirst = false, false, false, false
		st.card.ToolCallID, st.card.Title, st.card.Kind, st.card.RawInput = t.id, t.title, t.kind, t.input
		c.cards[v.ToolCallID] = st
	}
	c.send(c.root, toolCallUpdate{SessionUpdate: updateToolCallUpdate, ToolCallID: st.cardID, Status: statusInProgress})
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
	switch {
	case st.owner != st:
		c.nestedEnd(st, status, v)
		return
	case st.inTool:
		st.childDone, st.childStatus, st.childOut, st.endMeta = true, status, out, meta
		if st.toolDone {
			c.endCard(st)
		}
		return
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
		if st.owner != st {
			c.nestedText(st, v.Delta.ContentDelta)
			return
		}
		c.appendTranscript(st, v.Delta.ContentDelta)
		if c.interval > 0 && c.now().Sub(st.lastFlush) >= c.interval {
			c.flush(st)
		}
	case event.PartEnd:
		if st.owner != st {
			if len(st.line) > 0 {
				c.nestedLine(st)
			}
			return
		}
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
			msg := v.ToolResult
			if text, _, _, ok := spawn.ReadableResult(msg); ok {
				msg = text // a delegation's failure in words, not its JSON
			}
			msg, _, _ = strings.Cut(msg, "\n")
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
	if st.owner != st {
		if len(st.line) > 0 {
			c.nestedLine(st)
		}
		c.noteAt(st.owner, indent(st), line)
		return
	}
	c.noteAt(st, "", line)
}

// noteAt adds a line to the transcript of owner's card, after prefix.
func (c *converter) noteAt(owner *spawnState, prefix, line string) {
	if owner.closed {
		return
	}
	if n := len(owner.transcript); n > 0 && owner.transcript[n-1] != '\n' {
		c.appendTranscript(owner, "\n")
	}
	c.appendTranscript(owner, prefix+line+"\n")
	c.flush(owner)
}

// indent is the prefix of a nested child's lines in its owner's card:
// two spaces a level below the owner, at least one level.
func indent(st *spawnState) string {
	return strings.Repeat("  ", max(st.depth-st.owner.depth, 1))
}

// nestedText adds a nested child's streamed text to its line, and the
// lines it completes to the owner's card.
func (c *converter) nestedText(st *spawnState, text string) {
	if st.owner.closed {
		return
	}
	st.line = append(st.line, text...)
	if len(st.line) > maxTranscript {
		// One line longer than the whole transcript: its end is kept.
		c.nestedLine(st)
		return
	}
	if i := bytes.LastIndexByte(st.line, '\n'); i >= 0 {
		rest := st.line[i+1:]
		st.line = st.line[:i]
		c.nestedLine(st)
		st.line = append(st.line, rest...)
	}
}

// nestedLine moves a nested child's pending text into its owner's card,
// each line indented.
func (c *converter) nestedLine(st *spawnState) {
	text := strings.TrimRight(string(st.line), "\n")
	st.line = st.line[:0]
	if text == "" || st.owner.closed {
		return
	}
	prefix := indent(st)
	owner := st.owner
	if n := len(owner.transcript); n > 0 && owner.transcript[n-1] != '\n' {
		c.appendTranscript(owner, "\n")
	}
	c.appendTranscript(owner, prefix+strings.ReplaceAll(text, "\n", "\n"+prefix)+"\n")
	c.flush(owner)
}

// nestedEnd notes a nested child's end in its owner's card, at its
// parent's level: "✓ name", or why it did not finish.
func (c *converter) nestedEnd(st *spawnState, status string, v event.SpawnSessionEnd) {
	if len(st.line) > 0 {
		c.nestedLine(st)
	}
	line := "✓ " + st.name
	switch {
	case v.StopReason == event.StopAborted:
		line = "✗ " + st.name + ": " + spawn.AbortedWords(v.Error)
	case status == statusFailed:
		why := spawn.ReadableError(v.Error)
		if why == "" {
			why = "the child session ended with " + string(v.StopReason)
		}
		line = "✗ " + st.name + ": Failed: " + why
	}
	prefix := ""
	if p := c.spawns[st.parent]; p != nil && p.owner == st.owner && p != st.owner {
		prefix = indent(p)
	}
	c.noteAt(st.owner, prefix, line)
}

// toolDone handles the result of a root tool call that shows a child
// (flat): the card ends now if the child did; else (a child in the
// background) the result is shown and the card goes on with the child.
func (c *converter) toolDone(st *spawnState, v event.ToolCallComplete) {
	result := v.ToolResult
	if text, _, _, ok := spawn.ReadableResult(result); ok {
		result = text
	}
	st.toolDone, st.toolFailed, st.toolResult = true, v.IsError, result
	if st.childDone {
		c.endCard(st)
		return
	}
	st.toolFirst = true
	c.flush(st)
}

// endCard sends the last update of a delegation's tool call (flat), once
// both the tool and its child are done: failed if either failed; as
// content what the child did (its transcript, tool calls and nested
// children, less the answer at its end) and the answer: the tool's
// result, or the child's for a child that ran in the background.
func (c *converter) endCard(st *spawnState) {
	delete(c.cards, st.cardID)
	status := st.childStatus
	if st.toolFailed {
		status = statusFailed
	}
	answer := st.toolResult
	if st.toolFirst || answer == "" {
		answer = st.childOut
	}
	did := strings.TrimRight(string(st.transcript), "\n")
	if a := strings.TrimSpace(st.childOut); a != "" {
		did = strings.TrimRight(strings.TrimSuffix(did, a), "\n")
	}
	var content []toolCallContent
	if did != "" {
		if st.truncated {
			did = "…" + did
		}
		content = append(content, textContent(did))
	}
	if answer != "" {
		content = append(content, textContent(answer))
	}
	u := toolCallUpdate{
		SessionUpdate: updateToolCallUpdate, ToolCallID: st.cardID, Status: status, Content: content,
		Meta: map[string]any{"agentpool": st.endMeta},
	}
	if c.asking[st.cardID] > 0 {
		// It ends while an approval is shown on it: what it showed before.
		u.Title, u.Kind, u.RawInput = st.card.Title, st.card.Kind, st.card.RawInput
	}
	c.send(c.root, u)
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
		SessionUpdate: updateToolCallUpdate, ToolCallID: st.cardID,
		Content: st.content(),
	})
}

// content is what the spawn tool call shows while the child runs: its
// description and its progress transcript.
func (st *spawnState) content() []toolCallContent {
	out := []toolCallContent{textContent(st.desc)}
	if text := strings.TrimRight(string(st.transcript), "\n"); text != "" {
		if st.truncated {
			text = "…" + text
		}
		out = append(out, textContent(text))
	}
	if st.toolFirst && st.toolResult != "" {
		out = append(out, textContent(st.toolResult)) // "Running in the background as task …"
	}
	return out
}
