package replay

import (
	"context"
	"fmt"
	"strings"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/model"
	"github.com/agentpool/agentpool/session"
)

// Bounds of what Load reads: a recording larger than this is refused
// rather than held in memory.
const (
	MaxSessions = 10000  // sessions of the subtree
	MaxEvents   = 500000 // events of the subtree, all sessions together
)

// Response is one recorded model answer.
type Response struct {
	Message model.Message // the assistant message the turn produced
	Finish  string        // its finish reason
	Usage   event.Usage   // a run's usage, on its last answer (zero on the others)
	// Chunks are the message's text, thinking and tool call pieces as
	// the model streamed them (from the recorded part events); nil: one
	// piece per part of Message.
	Chunks []model.Chunk
}

// Tape is what one recorded session did: its model answers (the
// cassette) and the steps a replay must do again.
type Tape struct {
	Session   session.Session
	Responses []Response
	// Summaries answer the session's compaction requests, in order (the
	// agent records a summary in a compaction event, not as a message).
	Summaries []string
	Steps     []Step
	// children maps a spawn key (tracker.add) to the child's start.
	children map[string]event.SpawnSessionStart
}

// Recording is a stored session with its subtree, ready to replay.
type Recording struct {
	Root    session.Session // the session replayed (a root or a child)
	Node    string          // the agent or team it ran
	Prompts []string        // the user prompt of each of its runs, in order
	Tapes   map[string]*Tape
	Order   []string // session ids, parents before children
}

// Load reads the session id and its subtree from st. The session's
// prompts are its user messages (those a user typed, not injected ones);
// a session without messages of its own (a team) takes the first prompt
// of its first child, minus sharedPrompt when the child's starts with it
// (a team's shared prompt, "" for none).
func Load(ctx context.Context, st session.Store, id string, sharedPrompt func(node string) string) (*Recording, error) {
	all, err := session.Subtree(ctx, st, id)
	if err != nil {
		return nil, err
	}
	if len(all) > MaxSessions {
		return nil, fmt.Errorf("session %s has %d sessions in its tree; a replay takes at most %d", id, len(all), MaxSessions)
	}
	rec := &Recording{Root: all[0], Node: all[0].AgentName, Tapes: make(map[string]*Tape, len(all))}
	events := 0
	for _, s := range all {
		recs, err := st.Events(ctx, s.ID, 0)
		if err != nil {
			return nil, fmt.Errorf("events of %s: %w", s.ID, err)
		}
		if events += len(recs); events > MaxEvents {
			return nil, fmt.Errorf("session %s has more than %d events in its tree; a replay takes at most that many", id, MaxEvents)
		}
		msgs, err := st.Messages(ctx, s.ID)
		if err != nil {
			return nil, fmt.Errorf("messages of %s: %w", s.ID, err)
		}
		tp := &Tape{Session: s, children: map[string]event.SpawnSessionStart{}}
		tr := newTracker()
		tr.chunks, tr.index = [][]model.Chunk{}, map[int]int{}
		for _, r := range recs {
			if k := tr.add(r.Event); k != "" {
				tp.children[k] = r.Event.(event.SpawnSessionStart)
			}
		}
		tp.Steps, tp.Summaries = tr.steps, tr.summaries
		for _, m := range msgs {
			if m.Role == model.RoleAssistant {
				tp.Responses = append(tp.Responses, Response{Message: m.Message})
			}
		}
		for i := range tp.Responses {
			if i < len(tr.chunks) && sameMessage(tr.chunks[i], tp.Responses[i].Message) {
				tp.Responses[i].Chunks = tr.chunks[i]
			}
			tp.Responses[i].Finish = model.FinishStop
			if len(tp.Responses[i].Message.ToolCalls()) > 0 {
				tp.Responses[i].Finish = model.FinishToolCalls
			}
		}
		for _, e := range tr.ends {
			if e.turn >= 1 && e.turn <= len(tp.Responses) {
				r := &tp.Responses[e.turn-1]
				r.Usage = e.usage
				if e.finish != "" {
					r.Finish = e.finish
				}
			}
		}
		if s.ID == id {
			for _, m := range msgs {
				if m.Role == model.RoleUser && !m.Synthetic {
					rec.Prompts = append(rec.Prompts, m.Text())
				}
			}
		}
		rec.Tapes[s.ID] = tp
		rec.Order = append(rec.Order, s.ID)
	}
	if len(rec.Prompts) == 0 {
		rec.Prompts = rec.memberPrompt(ctx, st, sharedPrompt)
	}
	if len(rec.Prompts) == 0 {
		return nil, fmt.Errorf("session %s has no user prompt to replay", id)
	}
	return rec, nil
}

// memberPrompt is the prompt of a session that keeps no messages (a
// team): its first child's first user message, minus the team's shared
// prompt.
func (rec *Recording) memberPrompt(ctx context.Context, st session.Store, sharedPrompt func(string) string) []string {
	for _, sid := range rec.Order[1:] {
		if rec.Tapes[sid].Session.ParentID != rec.Root.ID {
			continue
		}
		msgs, err := st.Messages(ctx, sid)
		if err != nil {
			return nil
		}
		for _, m := range msgs {
			if m.Role == model.RoleUser && !m.Synthetic {
				p := m.Text()
				if sharedPrompt != nil {
					if sp := sharedPrompt(rec.Node); sp != "" && len(p) > len(sp)+2 && p[:len(sp)+2] == sp+"\n\n" {
						p = p[len(sp)+2:]
					}
				}
				return []string{p}
			}
		}
		return nil
	}
	return nil
}

// Calls counts the recorded model calls of the tree.
func (rec *Recording) Calls() int {
	n := 0
	for _, tp := range rec.Tapes {
		n += len(tp.Responses)
	}
	return n
}

// Outcome is how one run ended: its stop reason (an error's code after
// "error: ") and its final answer.
type Outcome struct {
	Stop   string `json:"stop"`
	Answer string `json:"answer"`
}

// Outcomes are how the recorded session's runs ended, in order.
func (rec *Recording) Outcomes() []Outcome {
	var out []Outcome
	for _, s := range rec.Tapes[rec.Root.ID].Steps {
		switch s.Kind {
		case StepAnswer:
			finish, text, _ := strings.Cut(s.Value, ": ")
			stop := string(event.StopCompleted)
			switch finish {
			case model.FinishLength:
				stop = string(event.StopMaxTokens)
			case model.FinishRefusal:
				stop = string(event.StopRefusal)
			}
			out = append(out, Outcome{Stop: stop, Answer: text})
		case StepError:
			out = append(out, Outcome{Stop: "error: " + s.Value})
		}
	}
	return out
}

// sameMessage reports whether chunks stream msg: the same text, thinking
// and tool calls (ids, names, arguments). A recorded turn whose events
// and message disagree (a response that failed half way, a repeated
// call id) is replayed from its message.
func sameMessage(chunks []model.Chunk, msg model.Message) bool {
	var text, thinking strings.Builder
	type tc struct {
		id, name string
		args     strings.Builder
	}
	var calls []*tc
	for _, c := range chunks {
		switch c.Kind {
		case model.ChunkText:
			text.WriteString(c.Text)
		case model.ChunkThinking:
			thinking.WriteString(c.Text)
		case model.ChunkToolCall:
			if c.Index == len(calls) {
				calls = append(calls, &tc{id: c.ToolCallID, name: c.ToolName})
			}
			if c.Index >= len(calls) {
				return false
			}
			calls[c.Index].args.WriteString(c.ArgsDelta)
		}
	}
	var wantText, wantThinking string
	var want []model.Part
	for _, p := range msg.Parts {
		switch p.Kind {
		case model.PartText:
			wantText += p.Text
		case model.PartThinking:
			wantThinking += p.Text
		case model.PartToolCall:
			want = append(want, p)
		}
	}
	if text.String() != wantText || thinking.String() != wantThinking || len(calls) != len(want) {
		return false
	}
	for i, c := range calls {
		args := c.args.String()
		if strings.TrimSpace(args) == "" {
			args = "{}"
		}
		if w := want[i]; w.DuplicateOf != "" || c.id != w.ToolCallID || c.name != w.ToolName || args != string(w.Args) {
			return false
		}
	}
	return true
}
