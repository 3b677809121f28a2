package aguiagent

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
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
	Type          string `json:"type"`
	MessageID     string `json:"messageId"`
	Delta         string `json:"delta"`
	ToolCallID    string `json:"toolCallId"`
	ToolCallName  string `json:"toolCallName"`
	Content       string `json:"content"`
	Message       string `json:"message"`
	Code          string `json:"code"`
	Outcome       string `json:"outcome"`
	Result        any    `json:"result"`
	SubagentRunID string `json:"subagentRunId"`
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
		for data, err := range events(resp.Body) {
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

// events yields the data of each server-sent event of r (its data lines
// joined by newlines), each at most maxEventBytes.
func events(r io.Reader) iter.Seq2[[]byte, error] {
	return func(yield func([]byte, error) bool) {
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 0, 64<<10), maxEventBytes)
		var data []byte
		has := false
		for sc.Scan() {
			line := sc.Bytes()
			if len(line) == 0 {
				if has && !yield(data, nil) {
					return
				}
				data, has = data[:0], false
				continue
			}
			v, ok := bytes.CutPrefix(line, []byte("data:"))
			if !ok {
				continue // comments, event:, id:, retry:
			}
			v = bytes.TrimPrefix(v, []byte(" "))
			if has {
				data = append(data, '\n')
			}
			data, has = append(data, v...), true
			if len(data) > maxEventBytes {
				yield(nil, fmt.Errorf("an event is over %d bytes", maxEventBytes))
				return
			}
		}
		if err := sc.Err(); err != nil {
			if errors.Is(err, bufio.ErrTooLong) {
				err = fmt.Errorf("an event line is over %d bytes", maxEventBytes)
			}
			yield(nil, err)
			return
		}
		if has {
			yield(data, nil)
		}
	}
}
