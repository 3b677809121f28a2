package testmodel

import (
	"context"
	"encoding/json"
	"errors"
	"iter"
	"strings"
	"time"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/id"
	"github.com/agentpool/agentpool/model"
)

// ToolCall is one scripted tool call.
type ToolCall struct {
	Name string
	Args map[string]any
}

// Turn is one scripted response.
type Turn struct {
	Text         string
	Thinking     string
	ToolCalls    []ToolCall
	Error        string        // when set, the model call fails with this message after streaming the text
	Delay        time.Duration // per-chunk delay; overrides Config.Delay when set
	FinishReason string
}

// Config configures a test model.
type Config struct {
	// AgentPool test-model keys.
	Text      string                    // custom_output_text
	CallTools []string                  // call_tools as a list
	ToolArgs  map[string]map[string]any // tool_args
	// CallAll calls every tool of the request (call_tools: all, the
	// manifest's default); CallTools is then not used. The zero Config
	// calls no tool, as Go programs that build one expect.
	CallAll bool
	// Seed varies the arguments made for tools without ToolArgs (seed).
	Seed int
	// Turns makes a scripted model; when set the keys above are ignored.
	Turns []Turn
	// Delay is slept before each chunk.
	Delay time.Duration
	// PreStreamDelay is slept once before a response's first chunk
	// (AgentPool's pre_stream_delay: a model slow to start answering).
	PreStreamDelay time.Duration
	// Name is returned by ID; "test" when empty.
	Name string
	// InputPrice and OutputPrice are its price in US dollars per million
	// tokens (model.Pricing), so that costs can be tested offline.
	InputPrice, OutputPrice float64
}

// Model is the scripted model. It is immutable after New.
type Model struct {
	cfg   Config
	turns []compiledTurn
	// args are the encoded ToolArgs of the AgentPool form, by tool.
	args map[string]string
}

type compiledTurn struct {
	Turn
	args []string // pre-encoded JSON arguments of each tool call
}

// New builds a model from cfg. It fails when tool arguments cannot be
// encoded as JSON.
func New(cfg Config) (*Model, error) {
	m := &Model{cfg: cfg}
	if len(cfg.Turns) == 0 {
		// The AgentPool form: its tool calls depend on the request (see
		// agentPoolTurn); only the fixed arguments are encoded here.
		for _, name := range cfg.CallTools {
			if name == "" {
				return nil, errors.New("testmodel: tool call without a name")
			}
		}
		m.args = make(map[string]string, len(cfg.ToolArgs))
		for name, a := range cfg.ToolArgs {
			if a == nil {
				a = map[string]any{}
			}
			b, err := json.Marshal(a)
			if err != nil {
				return nil, err
			}
			m.args[name] = string(b)
		}
		return m, nil
	}
	for _, t := range cfg.Turns {
		ct := compiledTurn{Turn: t}
		for _, tc := range t.ToolCalls {
			if tc.Name == "" {
				return nil, errors.New("testmodel: tool call without a name")
			}
			args := tc.Args
			if args == nil {
				args = map[string]any{}
			}
			b, err := json.Marshal(args)
			if err != nil {
				return nil, err
			}
			ct.args = append(ct.args, string(b))
		}
		m.turns = append(m.turns, ct)
	}
	return m, nil
}

// Price implements model.Pricing: Config's prices (0 when unset).
func (m *Model) Price() (inputPerMillion, outputPerMillion float64) {
	return m.cfg.InputPrice, m.cfg.OutputPrice
}

// ID returns the model's name.
func (m *Model) ID() string {
	if m.cfg.Name != "" {
		return m.cfg.Name
	}
	return "test"
}

// turnIndex counts the assistant messages after the last prompt a user
// typed; a summary of the test model's own (compaction) counts the turns
// it replaced.
func turnIndex(msgs []model.Message) int {
	n := 0
	for i := len(msgs) - 1; i >= 0; i-- {
		switch {
		case msgs[i].Role == model.RoleAssistant:
			n++
		case msgs[i].Role == model.RoleUser && !msgs[i].Synthetic:
			return n
		}
		if k, ok := summarisedTurns(msgs[i]); ok {
			return n + k
		}
	}
	return n
}

// Stream plays the turn that req is at.
func (m *Model) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
	return func(yield func(model.Chunk, error) bool) {
		i := turnIndex(req.Messages)
		var t compiledTurn
		switch {
		case req.Summarize != nil:
			t = compiledTurn{Turn: Turn{Text: summaryText(req.Summarize)}}
		case m.turns == nil:
			t = m.agentPoolTurn(req, i)
		case i < len(m.turns):
			t = m.turns[i]
		default:
			last := m.turns[len(m.turns)-1]
			t = compiledTurn{Turn: Turn{Text: last.Text, Delay: last.Delay}}
		}
		delay := m.cfg.Delay
		if t.Delay > 0 {
			delay = t.Delay
		}
		text := t.Text
		if text == "" && len(t.ToolCalls) == 0 && t.Error == "" {
			text = defaultText(req.Messages)
		}
		pause := m.cfg.PreStreamDelay + delay
		send := func(c model.Chunk) bool {
			wait := pause
			pause = delay
			if wait > 0 {
				timer := time.NewTimer(wait)
				select {
				case <-ctx.Done():
					timer.Stop()
					yield(model.Chunk{}, context.Cause(ctx))
					return false
				case <-timer.C:
				}
			} else if err := ctx.Err(); err != nil {
				yield(model.Chunk{}, context.Cause(ctx))
				return false
			}
			return yield(c, nil)
		}
		var out int
		for rest := t.Thinking; rest != ""; {
			piece := nextWord(rest)
			rest = rest[len(piece):]
			out += len(piece)
			if !send(model.Chunk{Kind: model.ChunkThinking, Text: piece}) {
				return
			}
		}
		for rest := text; rest != ""; {
			piece := nextWord(rest)
			rest = rest[len(piece):]
			out += len(piece)
			if !send(model.Chunk{Kind: model.ChunkText, Text: piece}) {
				return
			}
		}
		if t.Error != "" {
			yield(model.Chunk{}, errors.New(t.Error))
			return
		}
		for k, tc := range t.ToolCalls {
			callID := id.Ascending(id.ToolCall)
			if !send(model.Chunk{Kind: model.ChunkToolCall, Index: k, ToolCallID: callID, ToolName: tc.Name}) {
				return
			}
			a := t.args[k]
			half := len(a) / 2
			for _, d := range []string{a[:half], a[half:]} {
				if d == "" {
					continue
				}
				out += len(d)
				if !send(model.Chunk{Kind: model.ChunkToolCall, Index: k, ArgsDelta: d}) {
					return
				}
			}
		}
		usage := event.Usage{InputTokens: estimateTokens(req), OutputTokens: int64(max(1, out/4))}
		if !send(model.Chunk{Kind: model.ChunkUsage, Usage: usage}) {
			return
		}
		finish := t.FinishReason
		if finish == "" {
			finish = model.FinishStop
			if len(t.ToolCalls) > 0 {
				finish = model.FinishToolCalls
			}
		}
		send(model.Chunk{Kind: model.ChunkFinish, FinishReason: finish})
	}
}

func defaultText(msgs []model.Message) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == model.RoleUser {
			p := msgs[i].Text()
			if len(p) > 80 {
				p = p[:80] + "..."
			}
			return "Test model reply to: " + p
		}
	}
	return "Test model reply."
}

// nextWord returns the first word-sized delta of s: a word and its
// trailing space, or all of s.
func nextWord(s string) string {
	if i := strings.IndexByte(s, ' '); i >= 0 {
		return s[:i+1]
	}
	return s
}

func estimateTokens(req *model.Request) int64 {
	n := len(req.System)
	for _, m := range req.Messages {
		for _, p := range m.Parts {
			n += len(p.Text) + len(p.Args)
		}
	}
	return int64(max(1, n/4))
}
