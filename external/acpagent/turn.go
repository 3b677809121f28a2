package acpagent

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	acp "github.com/coder/acp-go-sdk"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/spawn"
	"github.com/agentpool/agentpool/tool"
)

// turn is one prompt of a child session in progress: it turns the
// agent's session/update notifications into the session's events, in
// the order the agent sent them. The SDK hands notifications over one at
// a time; once the prompt is answered, finish closes the turn and a
// notification that comes later is dropped, so that nothing follows the
// session's last event.
type turn struct {
	n   *Node
	inv *spawn.Invocation
	ctx context.Context // the run's: its end withdraws the turn's questions
	// calls is the context of the tool calls served to the agent (the
	// run's, ended by close too), stopCalls ends it.
	calls     context.Context
	stopCalls context.CancelFunc
	unserve   func() // removes the turn's MCP route; nil: none

	mu     sync.Mutex
	idle   sync.Cond // signalled when busy drops to 0
	busy   int       // updates being turned into events, served calls running
	closed bool
	paused bool          // between prompts (between): updates are dropped
	edits  approvedEdits // granted edits not written yet
	terms  *terminals    // made by the first terminal/create
	// cp is where what the agent changes is checkpointed.
	cp *turnCheckpoint
	// announced are the agent's tool calls as served calls claim them
	// (claim), in the order announced; noted is closed, and replaced,
	// when one is noted.
	announced []*announcedCall
	noted     chan struct{}

	// The rest is touched by one update at a time, then by finish.
	open      int    // index of the open part; -1: none
	openKind  string // its kind (event.PartText or PartThinking)
	parts     int    // parts opened so far
	toolCalls map[string]*toolCall
	order     []string        // call ids in the order started
	text      strings.Builder // the agent's message since its last tool call
	all       strings.Builder // the agent's whole message
	cost      float64
}

// toolCall is a tool call the agent announced: what tool_call_complete
// repeats. An agent may name the input and the files only in a later
// update (opencode announces its calls with no input, then sends the
// input and the files when the call runs, and neither when it ends), so
// the latest known are kept for the end.
type toolCall struct {
	title, kind string
	input       json.RawMessage
	locs        []event.Location
	done        bool
}

func newTurn(ctx context.Context, n *Node, inv *spawn.Invocation) *turn {
	t := &turn{n: n, inv: inv, ctx: ctx, open: -1, toolCalls: map[string]*toolCall{}, noted: make(chan struct{}),
		cp: &turnCheckpoint{n: n, session: inv.Session.ID}}
	t.calls, t.stopCalls = context.WithCancel(ctx)
	t.idle.L = &t.mu
	return t
}

// enter marks an update in progress; false once the turn is closed.
func (t *turn) enter() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return false
	}
	t.busy++
	return true
}

// enterUpdate is enter for a session/update: false between prompts too.
func (t *turn) enterUpdate() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed || t.paused {
		return false
	}
	t.busy++
	return true
}

// between ends the agent's answer to one prompt when the session goes on
// with another (an injected message): it waits for the updates and served
// calls in progress, closes the open part and returns the answer's text
// (after its last tool call, else all of it), so that the final message
// of the session is its last answer. An update of the ended answer that
// comes while it waits is dropped, as after finish. Tool calls the agent
// left open stay open: finish ends them.
func (t *turn) between() string {
	t.mu.Lock()
	t.paused = true
	for t.busy > 0 {
		t.idle.Wait()
	}
	t.mu.Unlock()
	t.endPart()
	reply := strings.TrimSpace(t.text.String())
	if reply == "" {
		reply = strings.TrimSpace(t.all.String())
	}
	t.text.Reset()
	t.all.Reset()
	t.mu.Lock()
	t.paused = false
	t.mu.Unlock()
	return reply
}

func (t *turn) leave() {
	t.mu.Lock()
	t.busy--
	if t.busy == 0 {
		t.idle.Broadcast()
	}
	t.mu.Unlock()
}

// close closes the turn, ends the served calls still running and waits
// for them and for the update in progress, if any: nothing of the turn
// reaches the session after it.
func (t *turn) close() {
	t.mu.Lock()
	t.closed = true
	t.mu.Unlock()
	if t.unserve != nil {
		t.unserve()
	}
	t.stopCalls()
	t.mu.Lock()
	for t.busy > 0 {
		t.idle.Wait()
	}
	t.mu.Unlock()
}

// update turns one session/update into events. Events are emitted
// outside the turn's lock.
func (t *turn) update(u acp.SessionUpdate) {
	if !t.enterUpdate() {
		return
	}
	defer t.leave()
	sink := t.inv.Sink
	switch {
	case u.AgentMessageChunk != nil:
		if s := blockText(u.AgentMessageChunk.Content); s != "" {
			t.chunk(event.PartText, s)
			t.text.WriteString(s)
			t.all.WriteString(s)
		}
	case u.AgentThoughtChunk != nil:
		if s := blockText(u.AgentThoughtChunk.Content); s != "" {
			t.chunk(event.PartThinking, s)
		}
	case u.ToolCall != nil:
		tc := u.ToolCall
		t.cp.noteTerminals(tc.ToolCallId, tc.Content)
		t.endPart()
		t.text.Reset()
		id := string(tc.ToolCallId)
		c := &toolCall{title: tc.Title, kind: toolKind(tc.Kind), input: rawJSON(tc.RawInput), locs: locations(tc.Locations)}
		if _, dup := t.toolCalls[id]; dup {
			// A call announced twice: the second is an update.
			t.toolUpdate(id, acp.SessionToolCallUpdate{ToolCallId: tc.ToolCallId, Status: &tc.Status, Content: tc.Content, RawOutput: tc.RawOutput, Locations: tc.Locations})
			return
		}
		t.toolCalls[id] = c
		t.order = append(t.order, id)
		t.note(id, c.title, c.input, false)
		sink.Emit(event.ToolCallStart{ToolCallID: id, ToolName: c.name(), Title: c.title, ToolKind: c.kind, RawInput: c.input, Locations: c.locs})
		if tc.Status == acp.ToolCallStatusCompleted || tc.Status == acp.ToolCallStatusFailed {
			t.toolUpdate(id, acp.SessionToolCallUpdate{ToolCallId: tc.ToolCallId, Status: &tc.Status, Content: tc.Content, RawOutput: tc.RawOutput})
		}
	case u.ToolCallUpdate != nil:
		t.cp.noteTerminals(u.ToolCallUpdate.ToolCallId, u.ToolCallUpdate.Content)
		t.endPart()
		t.toolUpdate(string(u.ToolCallUpdate.ToolCallId), *u.ToolCallUpdate)
	case u.Plan != nil:
		t.endPart()
		entries := make([]event.PlanEntry, len(u.Plan.Entries))
		for i, e := range u.Plan.Entries {
			entries[i] = event.PlanEntry{Content: e.Content, Priority: string(e.Priority), Status: string(e.Status)}
		}
		sink.Emit(event.PlanUpdate{Entries: entries})
	case u.UsageUpdate != nil:
		if c := u.UsageUpdate.Cost; c != nil && strings.EqualFold(c.Currency, "USD") {
			t.cost = c.Amount // the session's cost so far
		}
	}
}

// chunk adds streamed text to the open part of its kind, opening one.
func (t *turn) chunk(kind, s string) {
	if t.open < 0 || t.openKind != kind {
		t.endPart()
		t.open, t.openKind = t.parts, kind
		t.parts++
		t.inv.Sink.Emit(event.PartStart{Index: t.open, Part: event.Part{PartKind: kind}})
	}
	t.inv.Sink.Emit(event.PartDelta{Index: t.open, Delta: event.Delta{PartDeltaKind: kind, ContentDelta: s}})
}

func (t *turn) endPart() {
	if t.open >= 0 {
		t.inv.Sink.Emit(event.PartEnd{Index: t.open})
		t.open = -1
	}
}

// toolUpdate reports a tool call's progress, or its end when it
// completed or failed. An update of a call never announced announces it.
func (t *turn) toolUpdate(id string, u acp.SessionToolCallUpdate) {
	c, ok := t.toolCalls[id]
	if !ok {
		c = &toolCall{kind: tool.KindOther, input: rawJSON(u.RawInput), locs: locations(u.Locations)}
		if u.Title != nil {
			c.title = *u.Title
		}
		if u.Kind != nil {
			c.kind = toolKind(*u.Kind)
		}
		t.toolCalls[id] = c
		t.order = append(t.order, id)
		t.inv.Sink.Emit(event.ToolCallStart{ToolCallID: id, ToolName: c.name(), Title: c.title, ToolKind: c.kind, RawInput: c.input, Locations: c.locs})
	}
	if c.done {
		return
	}
	retitled := u.Title != nil && *u.Title != "" && *u.Title != c.title
	if retitled {
		c.title = *u.Title
	}
	if len(c.input) == 0 || string(c.input) == "{}" {
		if in := rawJSON(u.RawInput); string(in) != "{}" {
			c.input = in
		}
	}
	if len(u.Locations) > 0 {
		c.locs = locations(u.Locations)
	}
	status := acp.ToolCallStatus("")
	if u.Status != nil {
		status = *u.Status
	}
	t.note(id, c.title, c.input, status == acp.ToolCallStatusCompleted || status == acp.ToolCallStatusFailed)
	switch status {
	case acp.ToolCallStatusCompleted, acp.ToolCallStatusFailed:
		c.done = true
		if retitled {
			// tool_call_complete has no title, and an agent may give the
			// call its title only as it ends (opencode: the file it read).
			t.inv.Sink.Emit(event.ToolCallProgress{ToolCallID: id, Status: event.StatusInProgress, Title: c.title})
		}
		result, diffs := toolOutput(u.Content, u.RawOutput)
		t.inv.Sink.Emit(event.ToolCallComplete{
			ToolCallID: id, ToolName: c.name(), ToolInput: c.input, ToolResult: result,
			IsError: status == acp.ToolCallStatusFailed, AgentName: t.n.cfg.Name,
			Locations: c.locs, Diffs: diffs,
		})
	default:
		p := event.ToolCallProgress{ToolCallID: id, Status: string(status)}
		if p.Status == "" {
			p.Status = event.StatusInProgress
		}
		if u.Title != nil {
			p.Title = *u.Title
		}
		if text, _ := toolOutput(u.Content, nil); text != "" {
			p.Items = []event.ProgressItem{{Type: "text", Content: text}}
		}
		t.inv.Sink.Emit(p)
	}
}

// finish closes the turn once the prompt is answered: it closes the open
// part and ends every tool call the agent left unfinished (failed, with
// why), so that the session's stream is whole. It returns the agent's
// final message: its text after its last tool call, else all of it.
func (t *turn) finish(why string) string {
	t.close()
	t.endPart()
	for _, id := range t.order {
		if c := t.toolCalls[id]; !c.done {
			c.done = true
			t.inv.Sink.Emit(event.ToolCallComplete{
				ToolCallID: id, ToolName: c.name(), ToolInput: c.input, IsError: true, AgentName: t.n.cfg.Name,
				ToolResult: "the agent's turn ended before this call finished: " + why,
			})
		}
	}
	if s := strings.TrimSpace(t.text.String()); s != "" {
		return s
	}
	return strings.TrimSpace(t.all.String())
}

// name is the tool name shown for a call: ACP names none, so its kind
// ("read", "edit", "execute", ...) stands for it.
func (c *toolCall) name() string { return c.kind }

func toolKind(k acp.ToolKind) string {
	if k == "" {
		return tool.KindOther
	}
	return string(k)
}

// blockText is the text of a content block; other blocks (images, audio,
// resources) are described in brackets.
func blockText(b acp.ContentBlock) string {
	switch {
	case b.Text != nil:
		return b.Text.Text
	case b.ResourceLink != nil:
		return "[" + b.ResourceLink.Uri + "]"
	case b.Image != nil:
		return "[image]"
	case b.Audio != nil:
		return "[audio]"
	case b.Resource != nil:
		return "[resource]"
	}
	return ""
}

// toolOutput is a tool call's result text (its content blocks, else its
// raw output as JSON) and the diffs among its content.
func toolOutput(content []acp.ToolCallContent, raw any) (string, []event.FileDiff) {
	var b strings.Builder
	var diffs []event.FileDiff
	for _, c := range content {
		switch {
		case c.Content != nil:
			if b.Len() > 0 {
				b.WriteString("\n")
			}
			b.WriteString(blockText(c.Content.Content))
		case c.Diff != nil:
			diffs = append(diffs, event.FileDiff{Path: c.Diff.Path, OldText: c.Diff.OldText, NewText: c.Diff.NewText})
		case c.Terminal != nil:
			if b.Len() > 0 {
				b.WriteString("\n")
			}
			b.WriteString("[terminal " + c.Terminal.TerminalId + "]")
		}
	}
	if b.Len() == 0 && raw != nil {
		if s, ok := raw.(string); ok {
			return s, diffs
		}
		if j, err := json.Marshal(raw); err == nil {
			return string(j), diffs
		}
	}
	return b.String(), diffs
}

func locations(ls []acp.ToolCallLocation) []event.Location {
	if len(ls) == 0 {
		return nil
	}
	out := make([]event.Location, len(ls))
	for i, l := range ls {
		out[i] = event.Location{Path: l.Path}
		if l.Line != nil {
			out[i].Line = *l.Line
		}
	}
	return out
}

// rawJSON is a tool call's raw input as a JSON object ({} when it has
// none or it cannot be encoded).
func rawJSON(v any) json.RawMessage {
	if v == nil {
		return json.RawMessage("{}")
	}
	b, err := json.Marshal(v)
	if err != nil {
		return json.RawMessage(fmt.Sprintf("{%q:%q}", "error", err.Error()))
	}
	return b
}
