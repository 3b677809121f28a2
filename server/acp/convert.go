package acp

import (
	"encoding/json"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/agentpool/agentpool/event"
)

// SpawnToolCallPrefix starts the tool call id of the tool call that shows a
// child session: "spawn:<child_session_id>".
const SpawnToolCallPrefix = "spawn:"

// maxTranscript bounds the progress text kept for one child's spawn tool
// call (a tool_call_update replaces the whole content, so it is resent).
const maxTranscript = 8 << 10

// sendFunc sends one session/update notification.
type sendFunc func(sessionID string, update any)

// converter turns one root event stream (spec/EVENTS.md §2) into ACP
// session updates. It is an event.Sink; Finish closes whatever the stream
// left open.
type converter struct {
	mu        sync.Mutex
	root      string
	subagents bool
	send      sendFunc
	// interval throttles a child's streamed text into its spawn tool call;
	// 0 sends it only at part ends and tool calls (deterministic).
	interval time.Duration
	now      func() time.Time
	onSpawn  func(child string)
	log      *slog.Logger

	// relocate, when set, replaces the locations a tool named from its
	// input as the call started (see relocator).
	relocate func(locs []event.Location, input json.RawMessage) []event.Location
	// terms, when set, tells which client terminals may be embedded in a
	// tool call and learns which were shown; nil embeds every terminal id
	// a result names. noTerminals embeds none (a replay: they are gone).
	terms       terminalView
	noTerminals bool
	finished    bool

	spawns    map[string]*spawnState
	order     []string // child ids in start order
	tools     map[string]*openTool
	toolOrder []string
}

type openTool struct {
	session, id string
	command     string           // the input's command (a shell call), to attach its terminal early
	locs        []event.Location // the locations sent with the tool_call
	terminal    string           // the terminal embedded while it ran
}

// terminalView is what the converter needs of the client terminals.
type terminalView interface {
	// embeddable reports whether terminal id may be shown in a tool call:
	// a terminal of this connection not released yet.
	embeddable(id string) bool
	// shown says that the tool call that used terminal id was sent (or
	// will never be shown): a release the tool asked for may now be sent.
	shown(id string)
}

type spawnState struct {
	child, parent, toolCallID string
	name, sourceType, desc    string
	depth                     int
	transcript                []byte
	truncated                 bool
	dirty                     bool
	lastFlush                 time.Time
	closed                    bool
}

func newConverter(root string, subagents bool, send sendFunc, log *slog.Logger) *converter {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &converter{
		root: root, subagents: subagents, send: send, now: time.Now, log: log,
		spawns: map[string]*spawnState{}, tools: map[string]*openTool{},
	}
}

// Emit implements event.Sink.
func (c *converter) Emit(e event.Event) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s, ok := e.(event.Subagent); ok {
		c.child(s)
		return
	}
	switch v := e.(type) {
	case event.SpawnSessionStart:
		c.spawnStart(v)
	case event.SpawnSessionEnd:
		c.spawnEnd(v)
	default:
		c.own(c.root, e)
	}
}

// own maps an event of session sid to sid's own updates.
func (c *converter) own(sid string, e event.Event) {
	switch v := e.(type) {
	case event.PartDelta:
		switch v.Delta.PartDeltaKind {
		case event.PartText:
			if v.Delta.ContentDelta != "" {
				c.send(sid, ChunkUpdate{SessionUpdate: UpdateAgentMessageChunk, Content: textBlock(v.Delta.ContentDelta)})
			}
		case event.PartThinking:
			if v.Delta.ContentDelta != "" {
				c.send(sid, ChunkUpdate{SessionUpdate: UpdateAgentThoughtChunk, Content: textBlock(v.Delta.ContentDelta)})
			}
		}
	case event.ToolCallStart:
		title := v.Title
		if title == "" {
			title = v.ToolName
		}
		locs := v.Locations
		if c.relocate != nil {
			locs = c.relocate(locs, v.RawInput)
		}
		key := sid + "\x00" + v.ToolCallID
		if _, dup := c.tools[key]; !dup {
			c.tools[key] = &openTool{session: sid, id: v.ToolCallID, command: inputCommand(v.RawInput), locs: locs}
			c.toolOrder = append(c.toolOrder, key)
		}
		c.send(sid, ToolCallUpdate{
			SessionUpdate: UpdateToolCall, ToolCallID: v.ToolCallID, Title: title,
			Kind: toolKind(v.ToolKind), Status: StatusInProgress, Locations: toLocations(locs), RawInput: rawJSON(v.RawInput),
		})
	case event.ToolCallProgress:
		u := ToolCallUpdate{SessionUpdate: UpdateToolCallUpdate, ToolCallID: v.ToolCallID, Status: toolStatus(v.Status), Title: v.Title}
		for _, it := range v.Items {
			if it.Content != "" {
				u.Content = append(u.Content, textContent(it.Content))
			}
		}
		c.send(sid, u)
	case event.ToolCallComplete:
		c.complete(sid, v)
	case event.PlanUpdate:
		entries := make([]PlanEntry, 0, len(v.Entries))
		for _, en := range v.Entries {
			entries = append(entries, PlanEntry{Content: en.Content, Priority: planPriority(en.Priority), Status: planStatus(en.Status)})
		}
		c.send(sid, PlanUpdate{SessionUpdate: UpdatePlan, Entries: entries})
	}
}

// complete maps a tool call's end to its last tool_call_update: the
// status, the files it touched when they differ from those the tool_call
// named, a diff per changed file, the client terminal it ran in, and the
// result as text (left out when it only repeats a diff), rawOutput the
// result.
func (c *converter) complete(sid string, v event.ToolCallComplete) {
	key := sid + "\x00" + v.ToolCallID
	open := c.tools[key]
	delete(c.tools, key)
	status := StatusCompleted
	if v.IsError {
		status = StatusFailed
	}
	u := ToolCallUpdate{SessionUpdate: UpdateToolCallUpdate, ToolCallID: v.ToolCallID, Status: status, RawOutput: v.ToolResult}
	var sent []event.Location
	if open != nil {
		sent = open.locs
	}
	if len(v.Locations) > 0 && !sameLocations(sent, v.Locations) {
		u.Locations = toLocations(v.Locations)
	}
	for _, d := range v.Diffs {
		u.Content = append(u.Content, diffContent(d.Path, d.OldText, d.NewText))
	}
	term := terminalID(v.Metadata)
	if term != "" && c.embeddable(term) {
		u.Content = append(u.Content, terminalContent(term))
	}
	if v.ToolResult != "" && !repeatsDiff(v.ToolResult, v.Diffs) {
		u.Content = append(u.Content, textContent(v.ToolResult))
	}
	c.send(sid, u)
	if term != "" && c.terms != nil {
		c.terms.shown(term)
	}
}

func (c *converter) embeddable(term string) bool {
	switch {
	case c.noTerminals:
		return false
	case c.terms == nil:
		return true
	}
	return c.terms.embeddable(term)
}

// attachTerminal embeds a client terminal that was just created in the
// running tool call of session sid whose input command is one of the
// terminal's arguments (the shell tool runs /bin/sh -c <command>), so that
// the editor shows the command's output live. It reports false when no
// single open tool call matches (the terminal is then embedded when the
// call ends).
func (c *converter) attachTerminal(sid string, args []string, term string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.finished || c.noTerminals {
		return false
	}
	var match *openTool
	for _, key := range c.toolOrder {
		t, ok := c.tools[key]
		if !ok || t.session != sid || t.command == "" || t.terminal != "" || !slices.Contains(args, t.command) {
			continue
		}
		if match != nil {
			return false // two calls run the same command: which one is it?
		}
		match = t
	}
	if match == nil {
		return false
	}
	match.terminal = term
	c.send(sid, ToolCallUpdate{SessionUpdate: UpdateToolCallUpdate, ToolCallID: match.id, Content: []ToolCallContent{terminalContent(term)}})
	return true
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
	if _, dup := c.spawns[v.ChildSessionID]; dup {
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
		"spawn_mechanism":   v.SpawnMechanism,
		"run_mode":          v.RunMode,
		"source_name":       v.SourceName,
		"source_type":       v.SourceType,
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
	c.send(c.root, ToolCallUpdate{
		SessionUpdate: UpdateToolCall, ToolCallID: SpawnToolCallPrefix + v.ChildSessionID,
		Title: "Spawned: " + v.SourceName, Kind: "other", Status: StatusInProgress,
		Content: []ToolCallContent{textContent(desc)}, RawInput: raw,
		Meta: map[string]any{"agentpool": meta},
	})
	if c.subagents {
		c.send(v.ParentSessionID, SubagentUpdate{
			SessionUpdate: UpdateSubagent, SessionID: v.ChildSessionID, Title: v.SourceName, Description: desc,
			State: &SubagentState{State: "running"},
			Meta:  map[string]any{"agentpool": meta},
		})
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

	status := StatusFailed
	switch v.StopReason {
	case event.StopCompleted, event.StopMaxTokens, event.StopRefusal:
		status = StatusCompleted
	}
	out := v.LastAssistantMessage
	switch {
	case v.StopReason == event.StopAborted:
		out = joinNonEmpty(out, "Cancelled.")
	case status == StatusFailed && v.Error != "":
		out = joinNonEmpty(out, "Error: "+v.Error)
	}
	content := []ToolCallContent{textContent(st.desc)}
	if out != "" {
		content = append(content, textContent(out))
	}
	raw := map[string]any{"stop_reason": v.StopReason, "duration_ms": v.DurationMS, "session_id": v.ChildSessionID}
	if v.LastAssistantMessage != "" {
		raw["output"] = v.LastAssistantMessage
	}
	if v.Error != "" {
		raw["error"] = v.Error
	}
	if v.Usage != nil {
		raw["usage"] = v.Usage
	}
	if v.Cost != 0 {
		raw["cost"] = v.Cost
	}
	meta := map[string]any{
		"type": "spawn_end", "child_session_id": v.ChildSessionID, "parent_session_id": v.ParentSessionID,
		"source_name": v.SourceName, "depth": v.Depth, "stop_reason": v.StopReason,
	}
	if v.ToolCallID != "" {
		meta["tool_call_id"] = v.ToolCallID
	}
	c.send(c.root, ToolCallUpdate{
		SessionUpdate: UpdateToolCallUpdate, ToolCallID: SpawnToolCallPrefix + v.ChildSessionID,
		Status: status, Content: content, RawOutput: raw, Meta: map[string]any{"agentpool": meta},
	})
	if c.subagents {
		state := &SubagentState{State: "idle", StopReason: acpStopReason(v.StopReason)}
		if state.StopReason == "error" && v.Error != "" {
			state.Error = &Error{Code: CodeInternalError, Message: v.Error}
		}
		c.send(v.ParentSessionID, SubagentUpdate{SessionUpdate: UpdateSubagent, SessionID: v.ChildSessionID, State: state})
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
		c.note(st, "→ "+title)
	case event.ToolCallComplete:
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
	text := string(st.transcript)
	if st.truncated {
		text = "…" + text
	}
	st.dirty = false
	st.lastFlush = c.now()
	c.send(c.root, ToolCallUpdate{
		SessionUpdate: UpdateToolCallUpdate, ToolCallID: SpawnToolCallPrefix + st.child,
		Content: []ToolCallContent{textContent(st.desc), textContent(strings.TrimRight(text, "\n"))},
	})
}

// closeTools fails the tool calls of session sid that never completed.
func (c *converter) closeTools(sid string) {
	kept := c.toolOrder[:0]
	for _, key := range c.toolOrder {
		t, ok := c.tools[key]
		if !ok {
			continue
		}
		if sid != "" && t.session != sid {
			kept = append(kept, key)
			continue
		}
		delete(c.tools, key)
		c.send(t.session, ToolCallUpdate{SessionUpdate: UpdateToolCallUpdate, ToolCallID: t.id, Status: StatusFailed})
	}
	c.toolOrder = kept
}

// Finish closes every spawn tool call and tool call the stream left open
// (a child that never ended, a tool cut short): afterwards no tool call of
// this stream is in progress. stopReason is the root's event.Stop* value.
func (c *converter) Finish(stopReason string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	reason := event.StopError
	if stopReason == event.StopAborted {
		reason = event.StopAborted
	}
	for i := len(c.order) - 1; i >= 0; i-- {
		st := c.spawns[c.order[i]]
		if st.closed {
			continue
		}
		end := event.SpawnSessionEnd{
			ChildSessionID: st.child, ParentSessionID: st.parent, ToolCallID: st.toolCallID,
			SourceName: st.name, SourceType: st.sourceType, Depth: st.depth, StopReason: reason,
		}
		if reason == event.StopError {
			end.Error = "the run ended without closing this child session"
		}
		c.spawnEnd(end)
	}
	c.closeTools("")
	c.finished = true
}

// acpStopReason maps an event.Stop* value to an ACP stop reason.
func acpStopReason(stop string) string {
	switch stop {
	case event.StopCompleted:
		return StopEndTurn
	case event.StopMaxTokens:
		return StopMaxTokens
	case event.StopRefusal:
		return StopRefusal
	case event.StopAborted:
		return StopCancelled
	default:
		return "error"
	}
}

func planPriority(p string) string {
	switch p {
	case "high", "medium", "low":
		return p
	}
	return "medium"
}

func planStatus(s string) string {
	switch s {
	case "pending", "in_progress", "completed":
		return s
	}
	return "pending"
}

func rawJSON(r json.RawMessage) json.RawMessage {
	if len(r) == 0 || !json.Valid(r) {
		return json.RawMessage("{}")
	}
	return r
}

func joinNonEmpty(a, b string) string {
	if a == "" {
		return b
	}
	return a + "\n\n" + b
}

func toLocations(locs []event.Location) []ToolCallLocation {
	if len(locs) == 0 {
		return nil
	}
	out := make([]ToolCallLocation, len(locs))
	for i, l := range locs {
		out[i] = ToolCallLocation{Path: l.Path, Line: max(l.Line, 0)}
	}
	return out
}

func sameLocations(a, b []event.Location) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// terminalID is the client terminal a tool ran in (the shell tool's
// Metadata["terminal_id"]).
func terminalID(md map[string]any) string {
	id, _ := md["terminal_id"].(string)
	return id
}

// repeatsDiff reports whether a result is nothing but a diff's new text.
func repeatsDiff(result string, diffs []event.FileDiff) bool {
	for _, d := range diffs {
		if d.NewText == result {
			return true
		}
	}
	return false
}

// inputCommand is the "command" string of a tool's input, if any.
func inputCommand(raw json.RawMessage) string {
	var in struct {
		Command string `json:"command"`
	}
	if json.Unmarshal(raw, &in) != nil {
		return ""
	}
	return in.Command
}
