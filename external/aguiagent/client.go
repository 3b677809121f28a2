package aguiagent

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/agentpool/agentpool/external/member"
	"io"
	"iter"
	"net/http"
	"strings"
)

// Bounds of what the remote sends.
const (
	maxEventBytes = 8 << 20
	maxErrorBody  = 64 << 10
)

// runInput is the part of AG-UI's RunAgentInput this client sends.
type runInput struct {
	ThreadID       string          `json:"threadId"`
	RunID          string          `json:"runId"`
	State          json.RawMessage `json:"state"`
	Messages       []inputMessage  `json:"messages"`
	Tools          []any           `json:"tools"`
	Context        []any           `json:"context"`
	ForwardedProps json.RawMessage `json:"forwardedProps"`
}

type inputMessage struct {
	ID      string `json:"id"`
	Role    string `json:"role"`
	Content string `json:"content"`
}

// wireEvent holds the fields of the AG-UI events this client reads.
type wireEvent struct {
	Type         string `json:"type"`
	MessageID    string `json:"messageId"`
	Delta        string `json:"delta"`
	ToolCallID   string `json:"toolCallId"`
	ToolCallName string `json:"toolCallName"`
	// Content is a tool result's text (TOOL_CALL_RESULT) but an object
	// in other events (ACTIVITY_SNAPSHOT), so it is kept raw and read as
	// text only where a text is meant (contentText).
	Content       json.RawMessage `json:"content"`
	Message       string          `json:"message"`
	Code          string          `json:"code"`
	Outcome       string          `json:"outcome"`
	Result        any             `json:"result"`
	SubagentRunID string          `json:"subagentRunId"`
}

// contentText is ev's content as text: the string it holds, or the JSON
// itself when it is not a string.
func (ev *wireEvent) contentText() string {
	var s string
	if json.Unmarshal(ev.Content, &s) == nil {
		return s
	}
	return string(ev.Content)
}

// run posts in to endpoint and yields the events of its stream, in
// order, until the stream ends or ctx does.
func run(ctx context.Context, c *http.Client, endpoint string, headers map[string]string, in *runInput) iter.Seq2[*wireEvent, error] {
	return func(yield func(*wireEvent, error) bool) {
		body, err := json.Marshal(in)
		if err != nil {
			yield(nil, err)
			return
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(body))
		if err != nil {
			yield(nil, err)
			return
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "text/event-stream")
		for k, v := range headers {
			req.Header.Set(k, v)
		}
		resp, err := c.Do(req)
		if err != nil {
			yield(nil, err)
			return
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
			yield(nil, fmt.Errorf("%s answered %s: %s", endpoint, resp.Status, strings.TrimSpace(string(b))))
			return
		}
		for data, err := range member.Events(resp.Body, maxEventBytes) {
			if err != nil {
				yield(nil, err)
				return
			}
			var ev wireEvent
			if err := json.Unmarshal(data, &ev); err != nil {
				yield(nil, fmt.Errorf("an event is not JSON: %w", err))
				return
			}
			if !yield(&ev, nil) {
				return
			}
		}
	}
}
