package openai

import (
	"bytes"
	"cmp"
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
	// DefaultBaseURL is used when neither Config.BaseURL nor OPENAI_BASE_URL
	// is set.
	DefaultBaseURL = "https://api.openai.com/v1"
	// DefaultMaxRetries is the number of retries of a request answered with
	// 408, 409, 429 or 5xx (or that met a connection error) before any
	// chunk was yielded.
	DefaultMaxRetries = 3
	// MaxRetryDelay caps the wait between two attempts. A server that asks
	// (Retry-After) for a longer wait is not retried: its error is returned.
	MaxRetryDelay = provider.MaxRetryDelay
)

// Environment variables read by New.
const (
	EnvAPIKey  = "OPENAI_API_KEY"
	EnvBaseURL = "OPENAI_BASE_URL"
)

// Config configures a Model. It mirrors the manifest's model keys.
type Config struct {
	// Model is the provider's model id, e.g. "gpt-4o-mini" or "llama3.2".
	Model string
	// BaseURL of an OpenAI-compatible API ("http://127.0.0.1:11434/v1" for
	// Ollama). Empty: OPENAI_BASE_URL, else DefaultBaseURL. Its query
	// (Azure's "?api-version=...") is sent with every request.
	BaseURL string
	// APIKey, or else the environment variable named by APIKeyEnv, or else
	// OPENAI_API_KEY. Servers that need no key (most local ones) work with
	// none.
	APIKey    string
	APIKeyEnv string
	// Temperature is sent when non-nil.
	Temperature *float64
	// MaxTokens bounds the output when > 0: sent as max_completion_tokens
	// to api.openai.com, as max_tokens to every other server.
	MaxTokens int
	// Timeout bounds each attempt of a model call (connect to last chunk)
	// when > 0.
	Timeout time.Duration
	// Prices in US dollars per million tokens (see model.Pricing).
	InputPrice, OutputPrice float64
	// Sampling settings, sent when set (AgentPool's model settings).
	TopP, PresencePenalty, FrequencyPenalty *float64
	Seed                                    *int64
	Stop                                    []string
	ParallelToolCalls                       *bool
	ReasoningEffort                         string // low, medium, high, ...
	// Headers are added to every request.
	Headers map[string]string
	// MaxRetries: 0 means DefaultMaxRetries, a negative value means none.
	MaxRetries int
	// HTTPClient sends the requests; nil means a client of its own on
	// http.DefaultTransport.
	HTTPClient *http.Client
}

// Model is a Chat Completions model. It holds no per-run state and is safe
// for concurrent use.
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
		Name: "openai", Model: cfg.Model,
		BaseURL: cfg.BaseURL, APIKey: cfg.APIKey, APIKeyEnv: cfg.APIKeyEnv,
		EnvAPIKey: EnvAPIKey, EnvBaseURL: EnvBaseURL, DefaultBaseURL: DefaultBaseURL,
		URLForm: "http(s)://host[:port]/path", OfficialHost: "api.openai.com",
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
	if key := ep.APIKey(); key != "" {
		h.Set("Authorization", "Bearer "+key)
	}
	// Last: a gateway may need its own Authorization or User-Agent.
	for k, v := range cfg.Headers {
		h.Set(k, v)
	}
	return &Model{cfg: cfg, header: h, ep: ep}, nil
}

// ID returns the model id.
func (m *Model) ID() string { return m.cfg.Model }

// Price implements model.Pricing.
func (m *Model) Price() (inputPerMillion, outputPerMillion float64) {
	return m.cfg.InputPrice, m.cfg.OutputPrice
}

// Stream sends req as a streaming Chat Completions request and yields its
// chunks: thinking, text and tool-call deltas as they arrive, then one
// usage chunk (when the server reports usage) and one finish chunk. Any
// failure ends the stream with an *Error (or the context's cause when ctx
// is done).
func (m *Model) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
	return func(yield func(model.Chunk, error) bool) {
		st, body, err := provider.Begin(m.ep, req, m.params)
		if err != nil {
			yield(model.Chunk{}, err)
			return
		}
		res, err := m.ep.Post(ctx, st, "chat/completions", m.header, body)
		if err != nil {
			yield(model.Chunk{}, m.fail(ctx, st, err, false))
			return
		}
		defer res.Body.Close()
		events := provider.NewEventReader(res.Body)
		s := streamState{ids: map[int64]int{}}
		for {
			ev, err := events.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				yield(model.Chunk{}, m.fail(ctx, st, err, true))
				return
			}
			if bytes.HasPrefix(ev.Data, []byte("[DONE]")) {
				break
			}
			var ck chatChunk
			if err := json.Unmarshal(ev.Data, &ck); err != nil {
				yield(model.Chunk{}, m.fail(ctx, st, err, true))
				return
			}
			if ck.Error != nil {
				// An error object instead of a chunk.
				err := context.Cause(ctx)
				if err == nil {
					err = m.ep.StreamError(st, errorMessage(ev.Data), nil)
				}
				yield(model.Chunk{}, err)
				return
			}
			for _, c := range s.chunks(&ck) {
				if !yield(c, nil) {
					return
				}
			}
		}
		if err := context.Cause(ctx); err != nil {
			yield(model.Chunk{}, err)
			return
		}
		if s.finish == "" {
			yield(model.Chunk{}, m.ep.NewError(0, "stream ended before the response was complete (no finish_reason)", nil))
			return
		}
		yield(model.Chunk{Kind: model.ChunkFinish, FinishReason: s.finishReason()}, nil)
	}
}

// streamState follows one response.
type streamState struct {
	ids     map[int64]int // server tool-call index -> our index
	callIDs []string      // by our index
	finish  string        // the server's finish_reason
	refusal bool
}

// chunks turns one Chat Completions chunk into model chunks.
func (s *streamState) chunks(ck *chatChunk) []model.Chunk {
	var out []model.Chunk
	for _, ch := range ck.Choices {
		if ch.Index != 0 {
			continue // only one choice is asked for
		}
		d := ch.Delta
		if r := cmp.Or(d.ReasoningContent, d.Reasoning); r != "" {
			out = append(out, model.Chunk{Kind: model.ChunkThinking, Text: r})
		}
		if d.Content != "" {
			out = append(out, model.Chunk{Kind: model.ChunkText, Text: d.Content})
		}
		if d.Refusal != "" {
			s.refusal = true
			out = append(out, model.Chunk{Kind: model.ChunkText, Text: d.Refusal})
		}
		for _, tc := range d.ToolCalls {
			k, seen := s.ids[tc.Index]
			if seen && tc.ID != "" && s.callIDs[k] != "" && tc.ID != s.callIDs[k] {
				// A server that puts every call at the same index: a
				// new id is a new call.
				seen = false
			}
			c := model.Chunk{Kind: model.ChunkToolCall, ToolName: tc.Function.Name, ArgsDelta: tc.Function.Arguments}
			if !seen {
				k = len(s.callIDs)
				s.ids[tc.Index] = k
				s.callIDs = append(s.callIDs, tc.ID)
				c.ToolCallID = tc.ID
			}
			c.Index = k
			out = append(out, c)
		}
		if ch.FinishReason != "" {
			s.finish = ch.FinishReason
		}
	}
	if u := ck.Usage; u != nil {
		out = append(out, model.Chunk{Kind: model.ChunkUsage, Usage: event.Usage{
			InputTokens:     u.PromptTokens,
			OutputTokens:    u.CompletionTokens,
			CacheReadTokens: u.PromptTokensDetails.CachedTokens,
			ReasoningTokens: u.CompletionTokensDetails.ReasoningTokens,
		}})
	}
	return out
}

// finishReason normalizes the server's finish_reason to model.Finish*.
func (s *streamState) finishReason() string {
	switch s.finish {
	case "length":
		return model.FinishLength
	case "tool_calls", "function_call":
		return model.FinishToolCalls
	case "content_filter":
		return model.FinishRefusal
	}
	switch {
	case s.refusal:
		return model.FinishRefusal
	case len(s.callIDs) > 0:
		// Some local servers end a tool-calling turn with "stop".
		return model.FinishToolCalls
	}
	return model.FinishStop
}
