package anthropic

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"iter"
	"net/http"
	"time"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/model"
	"github.com/agentpool/agentpool/model/internal/provider"
)

// Defaults.
const (
	// DefaultBaseURL is used when neither Config.BaseURL nor
	// ANTHROPIC_BASE_URL is set.
	DefaultBaseURL = "https://api.anthropic.com"
	// DefaultMaxTokens is sent as max_tokens (which the Messages API
	// requires) when Config.MaxTokens is 0.
	DefaultMaxTokens = 4096
	// DefaultMaxRetries is the number of retries of a request answered with
	// 408, 409, 429 or 5xx (529 overloaded included) or that met a
	// connection error, before any chunk was yielded.
	DefaultMaxRetries = 3
	// MaxRetryDelay caps the wait between two attempts. A server that asks
	// (Retry-After) for a longer wait is not retried: its error is returned.
	MaxRetryDelay = provider.MaxRetryDelay
)

// Environment variables read by New.
const (
	EnvAPIKey  = "ANTHROPIC_API_KEY"
	EnvBaseURL = "ANTHROPIC_BASE_URL"
)

// Config configures a Model. It mirrors the manifest's model keys.
type Config struct {
	// Model is the model id, e.g. "claude-3-5-haiku-latest".
	Model string
	// BaseURL of the API (scheme and host, e.g. an Anthropic-compatible
	// gateway). Empty: ANTHROPIC_BASE_URL, else DefaultBaseURL. Its query
	// is sent with every request.
	BaseURL string
	// APIKey, or else the environment variable named by APIKeyEnv, or else
	// ANTHROPIC_API_KEY.
	APIKey    string
	APIKeyEnv string
	// Temperature is accepted for manifest compatibility but not sent: the
	// Messages API version 2026-10-21 has no temperature.
	Temperature *float64
	// MaxTokens is max_tokens; 0 means DefaultMaxTokens.
	MaxTokens int
	// Timeout bounds each attempt of a model call (connect to last event)
	// when > 0.
	Timeout time.Duration
	// Prices in US dollars per million tokens (see model.Pricing).
	InputPrice, OutputPrice float64
	// Stop are stop sequences, sent when set.
	Stop []string
	// MaxRetries: 0 means DefaultMaxRetries, a negative value means none.
	MaxRetries int
	// HTTPClient sends the requests; nil means a client of its own on
	// http.DefaultTransport.
	HTTPClient *http.Client
}

// Model is a Messages API model. It holds no per-run state and is safe for
// concurrent use.
type Model struct {
	cfg    Config
	header http.Header        // of every request; never changed after New
	ep     *provider.Endpoint // base URL, key, retries, error texts
}

var (
	_ model.Model   = (*Model)(nil)
	_ model.Pricing = (*Model)(nil)
)

// New builds a model. It fails only on a bad configuration (no model id, an
// unusable base URL); a missing API key is reported by Stream, so that a
// manifest can be loaded and validated on a machine without keys.
func New(cfg Config) (*Model, error) {
	ep, err := provider.Setup(provider.Config{
		Name: "anthropic", Model: cfg.Model,
		BaseURL: cfg.BaseURL, APIKey: cfg.APIKey, APIKeyEnv: cfg.APIKeyEnv,
		EnvAPIKey: EnvAPIKey, EnvBaseURL: EnvBaseURL, DefaultBaseURL: DefaultBaseURL,
		URLForm: "http(s)://host[:port]", OfficialHost: "api.anthropic.com",
		Timeout: cfg.Timeout, MaxRetries: cfg.MaxRetries, DefaultMaxRetries: DefaultMaxRetries,
		HTTPClient: cfg.HTTPClient,
	})
	if err != nil {
		return nil, err
	}
	h := http.Header{}
	h.Set("Accept", "application/json")
	h.Set("Content-Type", "application/json")
	h.Set("User-Agent", provider.UserAgent)
	h.Set("Anthropic-Version", apiVersion)
	if key := ep.APIKey(); key != "" {
		h.Set("Authorization", "Bearer "+key)
	}
	return &Model{cfg: cfg, header: h, ep: ep}, nil
}

// ID returns the model id.
func (m *Model) ID() string { return m.cfg.Model }

// Price implements model.Pricing.
func (m *Model) Price() (inputPerMillion, outputPerMillion float64) {
	return m.cfg.InputPrice, m.cfg.OutputPrice
}

// Stream sends req as a streaming Messages request and yields its chunks:
// thinking, text and tool-call deltas as they arrive, one usage chunk at
// message_delta (input tokens from message_start, output tokens from
// message_delta) and one finish chunk at message_stop. Any failure ends the
// stream with an *Error (or the context's cause when ctx is done); when the
// stream fails after message_start and before message_delta, the usage
// known so far (the input tokens) is yielded before the error.
func (m *Model) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
	return func(yield func(model.Chunk, error) bool) {
		st, body, err := provider.Begin(m.ep, req, m.params)
		if err != nil {
			yield(model.Chunk{}, err)
			return
		}
		res, err := m.ep.Post(ctx, st, "v1/messages", m.header, body)
		if err != nil {
			yield(model.Chunk{}, m.fail(ctx, st, err, false))
			return
		}
		defer res.Body.Close()

		s := streamState{blocks: map[int64]*block{}}
		fail := m.read(ctx, st, provider.NewEventReader(res.Body), &s, yield)
		if fail == nil {
			return // message_stop, or the consumer stopped
		}
		if s.started && !s.usageSent {
			if !yield(model.Chunk{Kind: model.ChunkUsage, Usage: s.usage}, nil) {
				return
			}
		}
		yield(model.Chunk{}, fail)
	}
}

// read yields the chunks of the events until message_stop (nil) or the
// consumer stops (nil), else returns why the stream failed.
func (m *Model) read(ctx context.Context, st *provider.CallState, events *provider.EventReader, s *streamState, yield func(model.Chunk, error) bool) error {
	for {
		ev, err := events.Next()
		switch {
		case err == io.EOF:
			if cause := context.Cause(ctx); cause != nil {
				return cause
			}
			return m.ep.NewError(0, "stream ended before message_stop", nil)
		case err != nil:
			return m.fail(ctx, st, err, true)
		}
		switch {
		case ev.Name == "" || ev.Name == "ping" || len(ev.Data) == 0:
			// Events without a name or data carry nothing of the
			// response.
			continue
		case ev.Name == "error":
			return m.streamError(st, ev.Data)
		}
		var se streamEvent
		if err := json.Unmarshal(ev.Data, &se); err != nil {
			return m.fail(ctx, st, err, true)
		}
		for _, c := range s.chunks(&se) {
			if !yield(c, nil) {
				return nil
			}
		}
		if s.stopped {
			return nil
		}
	}
}

// block is an open content block.
type block struct {
	tool     int    // index of the tool call; -1 for other blocks
	input    string // the input of content_block_start (a tool_use)
	gotDelta bool   // an input_json_delta arrived
}

// streamState follows one response.
type streamState struct {
	blocks    map[int64]*block // by content block index
	tools     int
	usage     event.Usage
	started   bool // message_start seen
	usageSent bool
	stopped   bool // message_stop seen
	stop      string
}

func (s *streamState) chunks(ev *streamEvent) []model.Chunk {
	switch ev.Type {
	case "message_start":
		s.started = true
		u := ev.Message.Usage
		s.usage = event.Usage{
			InputTokens:      u.InputTokens,
			OutputTokens:     u.OutputTokens,
			CacheReadTokens:  u.CacheReadInputTokens,
			CacheWriteTokens: u.CacheCreationInputTokens,
		}
	case "content_block_start":
		cb := ev.ContentBlock
		b := &block{tool: -1}
		s.blocks[ev.Index] = b
		switch cb.Type {
		case "text":
			if cb.Text != "" {
				return []model.Chunk{{Kind: model.ChunkText, Text: cb.Text}}
			}
		case "thinking":
			if cb.Thinking != "" {
				return []model.Chunk{{Kind: model.ChunkThinking, Text: cb.Thinking}}
			}
		case "tool_use":
			b.tool = s.tools
			s.tools++
			b.input = string(bytes.TrimSpace(cb.Input))
			return []model.Chunk{{Kind: model.ChunkToolCall, Index: b.tool, ToolCallID: cb.ID, ToolName: cb.Name}}
		}
	case "content_block_delta":
		d := ev.Delta
		switch d.Type {
		case "text_delta":
			if d.Text != "" {
				return []model.Chunk{{Kind: model.ChunkText, Text: d.Text}}
			}
		case "thinking_delta":
			if d.Thinking != "" {
				return []model.Chunk{{Kind: model.ChunkThinking, Text: d.Thinking}}
			}
		case "input_json_delta":
			b := s.blocks[ev.Index]
			if b == nil || b.tool < 0 || d.PartialJSON == "" {
				return nil
			}
			b.gotDelta = true
			return []model.Chunk{{Kind: model.ChunkToolCall, Index: b.tool, ArgsDelta: d.PartialJSON}}
		}
	case "content_block_stop":
		b := s.blocks[ev.Index]
		delete(s.blocks, ev.Index)
		if b != nil && b.tool >= 0 && !b.gotDelta && b.input != "" && b.input != "{}" && b.input != "null" {
			// A server that sends the whole input in content_block_start.
			return []model.Chunk{{Kind: model.ChunkToolCall, Index: b.tool, ArgsDelta: b.input}}
		}
	case "message_delta":
		s.stop = ev.Delta.StopReason
		u := ev.Usage
		s.usage.OutputTokens = u.OutputTokens
		// The counts of message_delta are cumulative; newer API versions
		// repeat the input counts there.
		if u.InputTokens > 0 {
			s.usage.InputTokens = u.InputTokens
		}
		if u.CacheReadInputTokens > 0 {
			s.usage.CacheReadTokens = u.CacheReadInputTokens
		}
		if u.CacheCreationInputTokens > 0 {
			s.usage.CacheWriteTokens = u.CacheCreationInputTokens
		}
		s.usageSent = true
		return []model.Chunk{{Kind: model.ChunkUsage, Usage: s.usage}}
	case "message_stop":
		s.stopped = true
		return []model.Chunk{{Kind: model.ChunkFinish, FinishReason: finishReason(s.stop, s.tools)}}
	}
	return nil
}

// finishReason normalizes a stop_reason to model.Finish*.
func finishReason(stop string, tools int) string {
	switch stop {
	case "tool_use":
		return model.FinishToolCalls
	case "max_tokens", "model_context_window_exceeded":
		return model.FinishLength
	case "refusal":
		return model.FinishRefusal
	case "end_turn", "stop_sequence", "pause_turn":
		return model.FinishStop
	}
	if tools > 0 {
		return model.FinishToolCalls
	}
	return model.FinishStop
}
