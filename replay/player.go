package replay

import (
	"context"
	"fmt"
	"iter"
	"slices"
	"strings"
	"sync"

	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/model"
	"github.com/agentpool/agentpool/spawn"
)

// Player replays a Recording: its Model answers the model calls of the
// replay's sessions from their recorded sessions' tapes, and it is the
// sink of the replay's root runs (Emit), which maps the sessions the
// replay spawns to the recorded ones and notes what they do.
//
// One Player serves one replay: its root runs one after the other in one
// root session (RunRequest.SessionID after the first), every model of the
// replaying pool being one of its Models.
type Player struct {
	rec *Recording

	// mu guards every field below. One lock: mapping a replay session to
	// a recorded one writes recorded, live and the id maps together, and
	// a model call reads them with next and summaries; a Player is one
	// replay's, used by its runs one after the other.
	mu       sync.Mutex
	recorded map[string]string // replay session id ("" the root) -> recorded session id
	next     map[string]int    // recorded session id -> its next response
	// summaries: recorded session id -> its next compaction summary
	summaries map[string]int
	live      map[string]*tracker // recorded session id -> what the replay did there
	unmapped  map[string]bool     // replay sessions the recording does not have
	// ids maps the ids a replay made (child session ids, async task ids)
	// to those recorded in their place, and back: the recorded answers
	// name recorded ids (task_status of a task), the replay's tools answer
	// with its own (task's session_id).
	toRecorded, toReplay map[string]string
	extra                []Divergence // model calls without an answer
}

// NewPlayer returns a Player of rec.
func NewPlayer(rec *Recording) *Player {
	return &Player{rec: rec, recorded: map[string]string{"": rec.Root.ID}, next: map[string]int{}, summaries: map[string]int{},
		live: map[string]*tracker{}, unmapped: map[string]bool{},
		toRecorded: map[string]string{}, toReplay: map[string]string{}}
}

// Model returns the model.Model that stands for the model spec describes:
// it answers from the cassette, under the id and at the price the model
// of spec has (so that the replay's events and costs name and count what
// the recording's did).
func (p *Player) Model(spec config.ModelSpec) model.Model {
	return cassette{p: p, id: ModelID(spec), in: spec.InputPrice, out: spec.OutputPrice}
}

// ModelID is the id the model that spec describes calls itself: the
// provider's model id, "test" for the offline models, a fallback's
// "fallback:" and its models' ids.
func ModelID(spec config.ModelSpec) string {
	switch spec.Type {
	case "", config.ModelTest, config.ModelScripted:
		return "test"
	case config.ModelFallback:
		ids := make([]string, len(spec.Fallback))
		for i, s := range spec.Fallback {
			ids[i] = ModelID(s)
		}
		return "fallback:" + strings.Join(ids, ",")
	}
	if spec.Model != "" {
		return spec.Model
	}
	return spec.Type
}

type cassette struct {
	p       *Player
	id      string
	in, out float64
}

func (c cassette) ID() string { return c.id }

// Price implements model.Pricing with the prices the manifest writes.
func (c cassette) Price() (float64, float64) { return c.in, c.out }

func (c cassette) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
	return func(yield func(model.Chunk, error) bool) {
		r, err := c.p.answer(spawn.InvocationFrom(ctx), req.Summarize != nil)
		if err != nil {
			yield(model.Chunk{}, err)
			return
		}
		for _, ch := range chunks(r) {
			if !yield(ch, nil) {
				return
			}
		}
	}
}

// answer is the next recorded response of the session inv runs in (its
// next compaction summary for a compaction request).
func (p *Player) answer(inv *spawn.Invocation, summary bool) (Response, error) {
	if inv == nil {
		return Response{}, fmt.Errorf("replay: a model call outside a session has no recorded answer")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	key := inv.Session.ID
	if inv.Session.ParentID == "" {
		key = "" // a root of the replay: the recorded session replayed
	}
	rid, ok := p.recorded[key]
	if !ok {
		d := Divergence{Session: "(new) " + inv.Session.ID, Agent: inv.Session.AgentName, Kind: "model_call",
			Now: str("a model call of a session the recording does not have")}
		p.extra = append(p.extra, d)
		return Response{}, fmt.Errorf("replay: session %s (%s) is not in the recording: no recorded answer", inv.Session.ID, inv.Session.AgentName)
	}
	tp := p.rec.Tapes[rid]
	if summary {
		k := p.summaries[rid]
		if k >= len(tp.Summaries) {
			p.extra = append(p.extra, Divergence{Session: rid, Agent: tp.Session.AgentName, Kind: "compaction",
				Recorded: str(fmt.Sprintf("%d compactions", len(tp.Summaries))), Now: str(fmt.Sprintf("compaction %d", k+1))})
			return Response{}, fmt.Errorf("replay: session %s recorded %d compactions; compaction %d has no recorded summary", rid, len(tp.Summaries), k+1)
		}
		p.summaries[rid] = k + 1
		text := model.Message{Role: model.RoleAssistant, Parts: []model.Part{{Kind: model.PartText, Text: tp.Summaries[k]}}}
		return Response{Message: text, Finish: model.FinishStop}, nil
	}
	n := p.next[rid]
	if n >= len(tp.Responses) {
		p.extra = append(p.extra, Divergence{Session: rid, Agent: tp.Session.AgentName, Turn: n + 1, Kind: "model_call",
			Recorded: str(fmt.Sprintf("%d model calls", len(tp.Responses))), Now: str(fmt.Sprintf("model call %d", n+1))})
		return Response{}, fmt.Errorf("replay: session %s recorded %d model calls; call %d has no recorded answer", rid, len(tp.Responses), n+1)
	}
	p.next[rid] = n + 1
	r := tp.Responses[n]
	if len(p.toReplay) > 0 && len(r.Message.ToolCalls()) > 0 {
		// Arguments naming a recorded id name the replay's instead, sent
		// whole (an id may straddle two recorded pieces).
		ids := replacer(p.toReplay)
		var msg model.Message
		for i, pt := range r.Message.Parts {
			if pt.Kind != model.PartToolCall {
				continue
			}
			if args := ids.Replace(string(pt.Args)); args != string(pt.Args) {
				if msg.Parts == nil {
					msg = r.Message.Clone()
				}
				msg.Parts[i].Args = []byte(args)
			}
		}
		if msg.Parts != nil {
			r.Message, r.Chunks = msg, nil
		}
	}
	return r, nil
}

// chunks streams a recorded response as a provider would: thinking, text,
// each tool call (a repeated id as the model gave it, so that the agent
// treats it as it did), usage, finish.
func chunks(r Response) []model.Chunk {
	out := make([]model.Chunk, 0, len(r.Message.Parts)+len(r.Chunks)+2)
	if r.Chunks != nil {
		out = append(out, r.Chunks...)
		return finish(out, r)
	}
	k := 0
	for _, pt := range r.Message.Parts {
		switch pt.Kind {
		case model.PartThinking:
			out = append(out, model.Chunk{Kind: model.ChunkThinking, Text: pt.Text})
		case model.PartText:
			out = append(out, model.Chunk{Kind: model.ChunkText, Text: pt.Text})
		case model.PartToolCall:
			id := pt.ToolCallID
			if pt.DuplicateOf != "" {
				id = pt.DuplicateOf
			}
			out = append(out, model.Chunk{Kind: model.ChunkToolCall, Index: k, ToolCallID: id, ToolName: pt.ToolName, ArgsDelta: string(pt.Args)})
			k++
		}
	}
	return finish(out, r)
}

// finish ends a response's chunks with its usage and finish reason.
func finish(out []model.Chunk, r Response) []model.Chunk {
	if !r.Usage.IsZero() {
		out = append(out, model.Chunk{Kind: model.ChunkUsage, Usage: r.Usage})
	}
	return append(out, model.Chunk{Kind: model.ChunkFinish, FinishReason: r.Finish})
}

// Emit implements event.Sink: the root stream of the replay's runs.
func (p *Player) Emit(e event.Event) {
	owner, in := event.Unwrap("", e)
	p.mu.Lock()
	defer p.mu.Unlock()
	rid, ok := p.recorded[owner]
	if !ok {
		return // a session the recording does not have: its spawn is the divergence
	}
	tr := p.live[rid]
	if tr == nil {
		tr = newTracker()
		p.live[rid] = tr
	}
	key := tr.add(in)
	if key == "" {
		return
	}
	// A spawn: the child is the recorded child spawned at the same place.
	// Its start reaches this sink before the child runs (the recorder
	// hands events over synchronously), so its model calls find it.
	start := in.(event.SpawnSessionStart)
	if child, ok := p.rec.Tapes[rid].children[key]; ok {
		p.recorded[start.ChildSessionID] = child.ChildSessionID
		p.toRecorded[start.ChildSessionID], p.toReplay[child.ChildSessionID] = child.ChildSessionID, start.ChildSessionID
		if start.TaskID != "" && child.TaskID != "" {
			p.toRecorded[start.TaskID], p.toReplay[child.TaskID] = child.TaskID, start.TaskID
		}
	} else {
		p.unmapped[start.ChildSessionID] = true
	}
}

// Divergence is one step the replay did not do as recorded.
type Divergence struct {
	Session  string  `json:"session"` // the recorded session (its parent's for a new child)
	Agent    string  `json:"agent"`
	Turn     int     `json:"turn"`
	Kind     string  `json:"kind"` // a Step kind; model_call or compaction: a call the cassette has no answer for
	Key      string  `json:"key,omitempty"`
	Recorded *string `json:"recorded"` // null: the replay did something the recording did not
	Now      *string `json:"now"`      // null: the replay did not do it
}

func str(s string) *string { return &s }

// Result is what a replay found: the steps compared and the divergences.
type Result struct {
	Sessions    int          `json:"sessions"`    // recorded sessions
	Replayed    int          `json:"replayed"`    // of them, those the replay ran
	ModelCalls  int          `json:"model_calls"` // recorded model calls
	Answered    int          `json:"answered"`    // of them, those the replay asked for
	Steps       int          `json:"steps"`       // recorded steps compared
	Divergences []Divergence `json:"divergences"` // in the order of the recording's sessions, then turn
}

// Result compares what the replay did with the recording; call it once
// the replay's runs have returned.
func (p *Player) Result() Result {
	p.mu.Lock()
	defer p.mu.Unlock()
	res := Result{Sessions: len(p.rec.Order), ModelCalls: p.rec.Calls(), Divergences: []Divergence{}}
	ids := replacer(p.toRecorded)
	for _, sid := range p.rec.Order {
		tp := p.rec.Tapes[sid]
		res.Steps += len(tp.Steps)
		res.Answered += p.next[sid]
		tr := p.live[sid]
		if tr == nil {
			continue // never spawned: the parent's spawn step says so
		}
		res.Replayed++
		now := make([]Step, len(tr.steps))
		for i, st := range tr.steps {
			st.Value = ids.Replace(st.Value)
			now[i] = st
		}
		res.Divergences = append(res.Divergences, compare(tp, now)...)
	}
	res.Divergences = append(res.Divergences, p.extra...)
	return res
}

// compare lists the recorded steps the replay did differently or not at
// all, and those it did that the recording has not, by turn and key.
func compare(tp *Tape, now []Step) []Divergence {
	got := make(map[string]Step, len(now))
	for _, s := range now {
		got[s.id()] = s
	}
	var out []Divergence
	seen := make(map[string]bool, len(tp.Steps))
	for _, r := range tp.Steps {
		seen[r.id()] = true
		d := Divergence{Session: tp.Session.ID, Agent: tp.Session.AgentName, Turn: r.Turn, Kind: r.Kind, Key: r.Key, Recorded: str(r.Value)}
		n, ok := got[r.id()]
		switch {
		case !ok:
			out = append(out, d)
		case n.Value != r.Value:
			d.Now = str(n.Value)
			out = append(out, d)
		}
	}
	for _, n := range now {
		if !seen[n.id()] {
			out = append(out, Divergence{Session: tp.Session.ID, Agent: tp.Session.AgentName, Turn: n.Turn, Kind: n.Kind, Key: n.Key, Now: str(n.Value)})
		}
	}
	slices.SortStableFunc(out, func(a, b Divergence) int { return a.Turn - b.Turn })
	return out
}

// replacer replaces every key of ids by its value.
func replacer(ids map[string]string) *strings.Replacer {
	pairs := make([]string, 0, 2*len(ids))
	for k, v := range ids {
		pairs = append(pairs, k, v)
	}
	return strings.NewReplacer(pairs...)
}
