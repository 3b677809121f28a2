package opencode

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/agentpool/agentpool/id"
	"github.com/agentpool/agentpool/server/opencode/internal/wire"
)

// transcript is the message list of one session as OpenCode clients see
// it: the same ids as the events that built it.
type transcript struct {
	msgs  []*tmsg
	byID  map[string]*tmsg
	parts map[string]*tpart // part id -> part
	// cutPrompt: the first user message's text is the spawn's prompt,
	// possibly cut to 200 bytes; GET .../message restores it from the store.
	cutPrompt *wire.TextPart
	// todos is the session's todo list, once known (nil: ask the
	// processor); see todo.go.
	todos []wire.Todo
	// shelved counts the parts whose text is on the shelf (shelf.go).
	shelved int
	// headless, when not zero, is when the transcript was started by an
	// assistant message of a root that no prompt of this server runs: a
	// run that goes on after a restart (pool.Pool.Continue), whose events
	// start at its model turns. GET .../message then puts before it the
	// stored conversation up to the run's prompt (the last one stored
	// before that time), and clears it.
	headless time.Time
}

func newTranscript() *transcript {
	return &transcript{byID: map[string]*tmsg{}, parts: map[string]*tpart{}}
}

type tmsg struct {
	user     *wire.UserMessage
	asst     *wire.AssistantMessage
	parts    []*tpart
	finished bool // step-finish added
}

func (m *tmsg) info() any {
	if m.user != nil {
		return m.user
	}
	return m.asst
}

func (m *tmsg) id() string {
	if m.user != nil {
		return m.user.ID
	}
	return m.asst.ID
}

// tpart holds one wire part (a pointer to TextPart, ReasoningPart,
// ToolPart, StepStartPart, StepFinishPart, AgentPart or SubtaskPart):
// read it with value, replace it with set. Parts are values: a later
// change replaces the part, never edits one already handed out.
type tpart struct {
	id  string
	cur any // the part, but for the deltas since grown was set
	// text is the text of a text or reasoning part as its deltas built it
	// (see grow); grown says that it is newer than cur's.
	text  strings.Builder
	grown bool
	// shelf, when set, says where the store has the whole text of this
	// user part, which keeps it cut (shelf.go).
	shelf *shelved
}

// value returns the part. A text or reasoning part that deltas extended
// since it was last read is copied once with its text now: a part
// streamed in n deltas costs one copy per read, not one per delta.
func (p *tpart) value() any {
	if p.grown {
		p.grown = false
		switch v := p.cur.(type) {
		case *wire.TextPart:
			c := *v
			c.Text = p.text.String()
			p.cur = &c
		case *wire.ReasoningPart:
			c := *v
			c.Text = p.text.String()
			p.cur = &c
		}
	}
	return p.cur
}

// set replaces the part.
func (p *tpart) set(v any) { p.cur, p.grown = v, false }

// grow appends a delta to the text of a text or reasoning part (other
// parts have none). Appending to a string copies it, so a part streamed in
// n deltas would cost O(n²); the builder appends in place and its strings
// stay valid (it never rewrites bytes it has handed out). When the part
// was replaced since the last delta (its text is another string), the
// builder starts again from it; comparing the same string is a pointer
// check.
func (p *tpart) grow(delta string) {
	if !p.grown {
		var text string
		switch v := p.cur.(type) {
		case *wire.TextPart:
			text = v.Text
		case *wire.ReasoningPart:
			text = v.Text
		default:
			return
		}
		if p.text.String() != text {
			p.text.Reset()
			p.text.WriteString(text)
		}
		p.grown = true
	}
	p.text.WriteString(delta)
}

func (t *transcript) add(m *tmsg) {
	if _, ok := t.byID[m.id()]; ok {
		return
	}
	t.msgs = append(t.msgs, m)
	t.byID[m.id()] = m
}

// prepend puts the messages of head (a transcript built from the store)
// before t's; an assistant message of t that had no user message to
// answer now answers head's last one.
func (t *transcript) prepend(head *transcript) {
	user := head.lastUser()
	var msgs []*tmsg
	for _, m := range head.msgs {
		if _, dup := t.byID[m.id()]; dup {
			continue
		}
		msgs = append(msgs, m)
		t.byID[m.id()] = m
	}
	for pid, p := range head.parts {
		if _, dup := t.parts[pid]; !dup {
			t.parts[pid] = p
		}
	}
	t.shelved += head.shelved
	for _, m := range t.msgs {
		if m.asst != nil && m.asst.ParentID == m.asst.ID && user != "" {
			m.asst.ParentID = user
		}
	}
	t.msgs = append(msgs, t.msgs...)
}

// putPart adds a part to its message or replaces it.
func (t *transcript) putPart(m *tmsg, pid string, v any) {
	if p, ok := t.parts[pid]; ok {
		p.set(v)
		return
	}
	p := &tpart{id: pid, cur: v}
	t.parts[pid] = p
	m.parts = append(m.parts, p)
}

// lastUser returns the id of the last user message, or "".
func (t *transcript) lastUser() string {
	for i := len(t.msgs) - 1; i >= 0; i-- {
		if t.msgs[i].user != nil {
			return t.msgs[i].user.ID
		}
	}
	return ""
}

// lastAssistant returns the last assistant message, or nil.
func (t *transcript) lastAssistant() *tmsg {
	for i := len(t.msgs) - 1; i >= 0; i-- {
		if t.msgs[i].asst != nil {
			return t.msgs[i]
		}
	}
	return nil
}

// encode returns the JSON of the messages: all of them, those before the
// message id before, at most the last limit (0: no limit). whole holds the
// texts of shelved parts read back from the store (nil: none).
func (t *transcript) encode(before string, limit int, whole map[*tpart]string) json.RawMessage {
	msgs := t.pick(before, limit)
	out := make([]wire.MessageWithParts, len(msgs))
	for i, m := range msgs {
		out[i] = m.withParts(whole)
	}
	b, _ := json.Marshal(out)
	return b
}

// pick returns the messages encode answers.
func (t *transcript) pick(before string, limit int) []*tmsg {
	msgs := t.msgs
	if before != "" {
		for i, m := range msgs {
			if m.id() == before {
				msgs = msgs[:i]
				break
			}
		}
	}
	if limit > 0 && len(msgs) > limit {
		msgs = msgs[len(msgs)-limit:]
	}
	return msgs
}

// withParts is m with its parts, shelved ones with their text from whole
// when it has them.
func (m *tmsg) withParts(whole map[*tpart]string) wire.MessageWithParts {
	parts := make([]any, len(m.parts))
	for i, p := range m.parts {
		parts[i] = p.value()
		if text, ok := whole[p]; ok {
			parts[i] = withPartText(parts[i], text)
		}
	}
	return wire.MessageWithParts{Info: m.info(), Parts: parts}
}

// derivedID makes a stable id of the given prefix for the n-th thing
// derived from base (an id): the time part of base and a base62 hash, so
// that GET answers built from the store keep their ids between calls.
func derivedID(prefix, base string, n int) string {
	const digits = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	body := base
	if i := strings.IndexByte(base, '_'); i >= 0 {
		body = base[i+1:]
	}
	timePart := "00000000000000"
	if len(body) >= 14 {
		timePart = body[:14]
	}
	// FNV-1a over base and n.
	h := uint64(14695981039346656037)
	for i := 0; i < len(base); i++ {
		h ^= uint64(base[i])
		h *= 1099511628211
	}
	for k := uint(0); k < 64; k += 8 {
		h ^= uint64(n>>k) & 0xff
		h *= 1099511628211
	}
	var r [12]byte
	for i := range r {
		r[i] = digits[h%62]
		h /= 62
		if h == 0 {
			h = uint64(n+1) * 2654435761
		}
	}
	return prefix + "_" + timePart + string(r[:])
}

// newPartID is a fresh ascending part id.
func newPartID() string { return id.Ascending(id.Part) }
