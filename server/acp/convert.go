package acp

import (
	"encoding/json"
	"github.com/agentpool/agentpool/spawn"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/agentpool/agentpool/event"
)

// sendFunc sends one session/update notification.
type sendFunc func(sessionID string, update any)

// converter turns one root event stream (spec/EVENTS.md §2) into ACP
// session updates. It is an event.Sink; Finish closes whatever the stream
// left open.
type converter struct {
	// mu guards the converter's state, its maps (asking, spawns, tools)
	// included. One lock: a converter is one root run's, whose events
	// the recorder hands over one at a time, so the lock is contended only
	// by an approval card shown or settled while the run waits.
	mu        sync.Mutex
	root      string
	subagents bool
	// flat: the client did not ask for the spawn tool calls (viewFlat):
	// a child is shown in its delegating tool call, a descendant nested
	// in its ancestor's card.
	flat bool
	send sendFunc
	// interval throttles a child's streamed text into its spawn tool call;
	// 0 sends it only at part ends and tool calls (deterministic).
	interval time.Duration
	now      func() time.Time
	onSpawn  func(child string)
	log      *slog.Logger
	// rootAgent is the mode the prompt runs (the agent or team of the
	// root session): an approval of its child names it.
	rootAgent string
	// asking counts the pending approvals shown on each card (by
	// toolCallId): the card is put back when the last is settled.
	asking map[string]int

	// relocate, when set, replaces the locations a tool named from its
	// input as the call started (see relocator).
	relocate func(locs []event.Location, input json.RawMessage) []event.Location
	// terms, when set, tells which client terminals may be embedded in a
	// tool call and learns which were shown; nil embeds every terminal id
	// a result names. noTerminals embeds none (a replay: they are gone).
	terms       terminalView
	noTerminals bool
	finished    bool

	spawns map[string]*spawnState
	order  []string // child ids in start order
	// cards are the children shown in a tool call of the root session
	// (flat), by its id.
	cards     map[string]*spawnState
	tools     map[string]*openTool
	toolOrder []string
}

type openTool struct {
	session, id string
	title, kind string           // as the tool_call showed them (an approval names them again)
	input       json.RawMessage  // the tool_call's rawInput
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

func newConverter(root string, view spawnView, send sendFunc, log *slog.Logger) *converter {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &converter{
		root: root, subagents: view == viewSubagents, flat: view == viewFlat, send: send, now: time.Now, log: log,
		spawns: map[string]*spawnState{}, tools: map[string]*openTool{}, cards: map[string]*spawnState{},
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
				c.send(sid, chunkUpdate{SessionUpdate: updateAgentMessageChunk, Content: textBlock(v.Delta.ContentDelta)})
			}
		case event.PartThinking:
			if v.Delta.ContentDelta != "" {
				c.send(sid, chunkUpdate{SessionUpdate: updateAgentThoughtChunk, Content: textBlock(v.Delta.ContentDelta)})
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
			c.tools[key] = &openTool{
				session: sid, id: v.ToolCallID, title: title, kind: toolKind(v.ToolKind), input: rawJSON(v.RawInput),
				command: inputCommand(v.RawInput), locs: locs,
			}
			c.toolOrder = append(c.toolOrder, key)
		}
		// In progress from the start, a delegation too: the tool runs
		// (ACP's pending is a call not started yet, or awaiting approval,
		// and clients such as acpx show the status of the tool_call
		// until the call ends).
		c.send(sid, toolCallUpdate{
			SessionUpdate: updateToolCall, ToolCallID: v.ToolCallID, Title: title,
			Kind: toolKind(v.ToolKind), Status: statusInProgress, Locations: toLocations(locs), RawInput: rawJSON(v.RawInput),
		})
	case event.ToolCallProgress:
		u := toolCallUpdate{SessionUpdate: updateToolCallUpdate, ToolCallID: v.ToolCallID, Status: toolStatus(v.Status), Title: v.Title}
		for _, it := range v.Items {
			if it.Content != "" {
				u.Content = append(u.Content, textContent(it.Content))
			}
		}
		c.send(sid, u)
	case event.ToolCallComplete:
		c.complete(sid, v)
	case event.PlanUpdate:
		entries := make([]planEntry, 0, len(v.Entries))
		for _, en := range v.Entries {
			entries = append(entries, planEntry{Content: en.Content, Priority: planPriority(en.Priority), Status: planStatus(en.Status)})
		}
		c.send(sid, planUpdate{SessionUpdate: updatePlan, Entries: entries})
	}
}

// complete maps a tool call's end to its last tool_call_update: the
// status, the files it touched when they differ from those the tool_call
// named, its input when the tool_call had none, a diff per changed file, the client terminal it ran in, and the
// result as text (left out when it only repeats a diff), rawOutput the
// result.
func (c *converter) complete(sid string, v event.ToolCallComplete) {
	key := sid + "\x00" + v.ToolCallID
	open := c.tools[key]
	delete(c.tools, key)
	if st := c.cards[v.ToolCallID]; st != nil && sid == c.root {
		c.toolDone(st, v)
		return
	}
	status := statusCompleted
	if v.IsError {
		status = statusFailed
	}
	u := toolCallUpdate{SessionUpdate: updateToolCallUpdate, ToolCallID: v.ToolCallID, Status: status}
	if open != nil && sid == c.root && c.asking[v.ToolCallID] > 0 {
		// It ends while an approval is shown on it (answered elsewhere, the
		// editor's card not put back yet): its own title again.
		u.Title = open.title
	}
	result := v.ToolResult
	if text, child, stop, ok := spawn.ReadableResult(result); ok {
		// A delegation: the child's answer in words; its session and
		// stop reason are machine fields (_meta), not a JSON string.
		result = text
		meta := map[string]any{"child_session_id": child}
		if stop != "" {
			meta["stop_reason"] = stop
		}
		u.Meta = map[string]any{"agentpool": meta}
	}
	var sent []event.Location
	if open != nil {
		sent = open.locs
	}
	if len(v.Locations) > 0 && !sameLocations(sent, v.Locations) {
		u.Locations = toLocations(v.Locations)
	}
	if open != nil && string(open.input) == "{}" {
		// Announced without its input (an external agent names it only
		// once the call runs): the editor gets it now.
		if in := rawJSON(v.ToolInput); string(in) != "{}" {
			u.RawInput = in
		}
	}
	for _, d := range v.Diffs {
		u.Content = append(u.Content, diffContent(d.Path, d.OldText, d.NewText))
	}
	term := terminalID(v.Metadata)
	if term != "" && c.embeddable(term) {
		u.Content = append(u.Content, terminalContent(term))
	}
	// The result is the content's text; rawOutput would only repeat it
	// (clients such as acpx show both).
	if result != "" && !repeatsDiff(result, v.Diffs) {
		u.Content = append(u.Content, textContent(result))
	} else if result != "" {
		u.RawOutput = result // kept for clients, not shown twice
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
	c.send(sid, toolCallUpdate{SessionUpdate: updateToolCallUpdate, ToolCallID: match.id, Content: []toolCallContent{terminalContent(term)}})
	return true
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
		c.send(t.session, toolCallUpdate{SessionUpdate: updateToolCallUpdate, ToolCallID: t.id, Status: statusFailed})
	}
	c.toolOrder = kept
}

// Finish closes every spawn tool call and tool call the stream left open
// (a child that never ended, a tool cut short): afterwards no tool call of
// this stream is in progress. stopReason is the root's event.Stop* value.
func (c *converter) Finish(stopReason event.StopReason) {
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
func acpStopReason(stop event.StopReason) string {
	switch stop {
	case event.StopCompleted:
		return stopEndTurn
	case event.StopMaxTokens:
		return stopMaxTokens
	case event.StopRefusal:
		return stopRefusal
	case event.StopAborted:
		return stopCancelled
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

func toLocations(locs []event.Location) []toolCallLocation {
	if len(locs) == 0 {
		return nil
	}
	out := make([]toolCallLocation, len(locs))
	for i, l := range locs {
		out[i] = toolCallLocation{Path: l.Path, Line: max(l.Line, 0)}
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
