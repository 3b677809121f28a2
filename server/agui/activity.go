// A subagent's content as one AG-UI activity message.

package agui

import (
	"encoding/json"
	"strconv"
	"unicode/utf8"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/id"
	"github.com/agentpool/agentpool/server/agui/internal/wire"
	"github.com/agentpool/agentpool/spawn"
)

// ActivityType is the activityType of a subagent's activity message.
const ActivityType = "subagent"

// Bounds of one subagent's activity: the text of one message (or one
// tool call's arguments or result) and the entries of its lists. What is
// cut is marked (truncated), never an error.
const (
	maxActivityText    = 64 << 10
	maxActivityEntries = 256
)

// activity is the activity message that shows one subagent's content:
// its messages (text and reasoning) and tool calls, changed by JSON
// Patches. A message's content and a call's arguments are lists of text
// pieces, each delta appended to its list ("/-"): JSON Patch cannot
// append to a string, and replacing the whole text at each delta would
// cost O(n²) bytes, while sending it in chunks delays every token.
//
// Why not the subagent's own TEXT_MESSAGE_* and TOOL_CALL_* events:
// @ag-ui/client puts every text message and tool call of a run into the
// run's messages (newMessages), subagentRunId or not, so a chat UI shows
// a child's words as the main agent's and sends them back as the
// conversation on the next run. An activity message is no conversation
// content: the client keeps it apart (role "activity") and leaves it out
// of the next run's input.
type activity struct {
	id        string
	msgs      int            // entries in /messages
	calls     map[string]int // tool call id -> its index in /toolCalls
	ncalls    int
	parts     map[int]*actPart // open parts by index
	truncated bool
}

// actPart is an open part of a subagent's model response.
type actPart struct {
	call string // the tool call id of a tool call part; "" for text
	idx  int    // its entry in /messages or /toolCalls; -1 when not kept
	n    int    // bytes of its text or arguments sent so far (bounded)
	cut  bool
	// tmpl is the template of its appends (item.ev), made at the first.
	tmpl *wire.Event
}

// actOp is one RFC 6902 operation on an activity's content.
type actOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value"`
}

// startActivity opens c's activity message, right after its
// SUBAGENT_STARTED.
func (m *mapper) startActivity(c *sessState, description string) {
	c.act = &activity{id: m.cfg.NewID(id.Message), calls: map[string]int{}, parts: map[int]*actPart{}}
	content := map[string]any{"name": c.name, "status": "running", "messages": []any{}, "toolCalls": []any{}}
	if description != "" {
		content["description"] = description
	}
	m.out(c, classLifecycle, &wire.Event{Type: wire.TypeActivitySnapshot, MessageID: c.act.id, ActivityType: ActivityType,
		Snapshot: mustJSON(content)})
}

// patch sends ops to c's activity.
func (m *mapper) patch(c *sessState, ops ...actOp) {
	if len(ops) == 0 {
		return
	}
	b, err := json.Marshal(ops)
	if err != nil {
		return
	}
	m.out(c, classLifecycle, &wire.Event{Type: wire.TypeActivityDelta, MessageID: c.act.id, ActivityType: ActivityType, Patch: b})
}

// subContent maps a subagent's own content into its activity and reports
// whether e was such content.
func (m *mapper) subContent(s *sessState, e event.Event) bool {
	a := s.act
	if a == nil {
		return false
	}
	switch ev := e.(type) {
	case event.PartStart:
		if a.parts[ev.Index] != nil {
			m.endActPart(s, ev.Index)
		}
		m.openActPart(s, ev.Index, ev.Part.PartKind, ev.Part.ToolCallID, ev.Part.ToolName)
		if ev.Part.PartKind == event.PartToolCall {
			m.actDelta(s, ev.Index, ev.Part.Args)
		} else {
			m.actDelta(s, ev.Index, ev.Part.Content)
		}
	case event.PartDelta:
		if a.parts[ev.Index] == nil {
			m.openActPart(s, ev.Index, ev.Delta.PartDeltaKind, ev.Delta.ToolCallID, "")
		}
		d := ev.Delta.ContentDelta
		if ev.Delta.PartDeltaKind == event.PartToolCall {
			d = ev.Delta.ArgsDelta
		}
		m.actDelta(s, ev.Index, d)
	case event.PartEnd:
		m.endActPart(s, ev.Index)
	case event.ToolCallStart:
		if _, ok := a.calls[ev.ToolCallID]; !ok && ev.ToolCallID != "" {
			args := ""
			if hasInput(ev.RawInput) {
				args = string(ev.RawInput)
			}
			m.addActCall(s, ev.ToolCallID, ev.ToolName, args)
		}
	case event.ToolCallComplete:
		// The call's approval, if it was announced, is settled first.
		m.awaitApprovals(func(ap *askedApproval) bool { return ap.sess == s && ap.callID == ev.ToolCallID })
		for idx, p := range a.parts {
			if p.call == ev.ToolCallID {
				m.endActPart(s, idx)
			}
		}
		i, ok := a.calls[ev.ToolCallID]
		if !ok || i < 0 {
			break
		}
		content, child, stop, _ := spawn.ReadableResult(ev.ToolResult)
		status := "completed"
		if ev.IsError {
			status = "failed"
		}
		text, cut := bound(content)
		ops := []actOp{
			{Op: "replace", Path: callPath(i, "status"), Value: status},
			{Op: "add", Path: callPath(i, "result"), Value: text},
		}
		var lateInput json.RawMessage
		if hasInput(ev.ToolInput) {
			lateInput = ev.ToolInput
		}
		if md := toolResultMetadata(ev, child, stop, lateInput); md != nil {
			ops = append(ops, actOp{Op: "add", Path: callPath(i, "metadata"), Value: json.RawMessage(md)})
		}
		m.patch(s, append(ops, m.markCut(a, cut)...)...)
	case event.StreamComplete:
		m.endActParts(s)
	case event.RunError:
		m.endActParts(s)
		s.lastErr = ev.Message
	default:
		return false
	}
	return true
}

func (m *mapper) openActPart(s *sessState, idx int, kind, callID, tool string) {
	a := s.act
	p := &actPart{idx: -1}
	switch kind {
	case event.PartText, event.PartThinking:
		if a.msgs >= maxActivityEntries {
			m.patch(s, m.markCut(a, true)...)
			break
		}
		role := "assistant"
		if kind == event.PartThinking {
			role = "reasoning"
		}
		p.idx = a.msgs
		a.msgs++
		m.patch(s, actOp{Op: "add", Path: "/messages/-", Value: map[string]any{"role": role, "content": []string{}}})
	case event.PartToolCall:
		if callID == "" {
			callID = m.cfg.NewID(id.ToolCall)
		}
		p.call = callID
		p.idx = m.addActCall(s, callID, tool, "")
	default:
		return // an unknown part kind has no AG-UI form
	}
	a.parts[idx] = p
}

// addActCall adds a tool call to s's activity (running) and returns its
// index, -1 when the list is full.
func (m *mapper) addActCall(s *sessState, callID, tool, args string) int {
	a := s.act
	if a.ncalls >= maxActivityEntries {
		a.calls[callID] = -1
		m.patch(s, m.markCut(a, true)...)
		return -1
	}
	if tool == "" {
		tool = "unknown"
	}
	i := a.ncalls
	a.ncalls++
	a.calls[callID] = i
	text, cut := bound(args)
	pieces := []string{}
	if text != "" {
		pieces = append(pieces, text)
	}
	m.patch(s, append([]actOp{{Op: "add", Path: "/toolCalls/-",
		Value: map[string]any{"id": callID, "name": tool, "args": pieces, "status": "running"}}}, m.markCut(a, cut)...)...)
	return i
}

// actDelta appends a fragment to an open part's list of pieces, at once:
// the stream's queue joins the appends the writer has not taken yet
// (mergeDelta), so one write carries one op per message.
func (m *mapper) actDelta(s *sessState, idx int, d string) {
	p := s.act.parts[idx]
	if p == nil || d == "" || p.idx < 0 || p.cut {
		return
	}
	if p.n+len(d) > maxActivityText {
		d = d[:validCut(d, maxActivityText-p.n)]
		p.cut = true
	}
	p.n += len(d)
	if d != "" {
		if p.tmpl == nil {
			path := "/messages/" + strconv.Itoa(p.idx) + "/content/-"
			if p.call != "" {
				path = callPath(p.idx, "args") + "/-"
			}
			p.tmpl = s.deltaTemplate(&wire.Event{Type: wire.TypeActivityDelta, MessageID: s.act.id, ActivityType: ActivityType, AppendPath: path})
		}
		m.outDelta(s, p.tmpl, d)
	}
	m.patch(s, m.markCut(s.act, p.cut)...)
}

func (m *mapper) endActPart(s *sessState, idx int) { delete(s.act.parts, idx) }

func (m *mapper) endActParts(s *sessState) {
	for idx := range s.act.parts {
		m.endActPart(s, idx)
	}
}

// endActivity closes s's activity before its SUBAGENT_FINISHED or
// SUBAGENT_ERROR: its open parts, its status and its answer or error.
func (m *mapper) endActivity(s *sessState, ok bool, text string) {
	if s.act == nil {
		return
	}
	m.endActParts(s)
	status, key := "completed", "result"
	if !ok {
		status, key = "failed", "error"
	}
	t, cut := bound(text)
	ops := []actOp{{Op: "replace", Path: "/status", Value: status}}
	if t != "" {
		ops = append(ops, actOp{Op: "add", Path: "/" + key, Value: t})
	}
	m.patch(s, append(ops, m.markCut(s.act, cut)...)...)
}

// markCut is the op that marks the activity truncated, once.
func (m *mapper) markCut(a *activity, cut bool) []actOp {
	if !cut || a.truncated {
		return nil
	}
	a.truncated = true
	return []actOp{{Op: "add", Path: "/truncated", Value: true}}
}

func callPath(i int, field string) string { return "/toolCalls/" + strconv.Itoa(i) + "/" + field }

// bound cuts s to maxActivityText bytes, between characters.
func bound(s string) (string, bool) {
	if len(s) <= maxActivityText {
		return s, false
	}
	return s[:validCut(s, maxActivityText)], true
}

// validCut is the largest n' <= n at which s can be cut between
// characters.
func validCut(s string, n int) int {
	if n >= len(s) {
		return len(s)
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return n
}
