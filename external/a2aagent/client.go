package a2aagent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/agentpool/agentpool/external/member"
	"io"
	"iter"
	"net/http"
	"strings"
	"sync/atomic"

	"github.com/a2aproject/a2a-go/a2a"
)

// The JSON-RPC methods of A2A 0.3 this client calls.
const (
	methodStream = "message/stream"
	methodSend   = "message/send"
	methodCancel = "tasks/cancel"
)

// wellKnownCard is where an agent's card is, under its base URL.
const wellKnownCard = "/.well-known/agent-card.json"

// client speaks A2A's JSON-RPC binding (HTTP POST, answers as JSON or as
// server-sent events) to one remote agent. It is agentpool's own rather
// than the SDK's a2aclient, which brings gRPC (64 packages) into the
// command line for a transport agentpool does not use, and reads an
// event stream with a 64 KiB line limit; this one bounds each event and
// each answer by maxEventBytes.
type client struct {
	http    *http.Client
	headers map[string]string
	seq     atomic.Int64
}

// rpcError is a JSON-RPC error answer.
type rpcError struct {
	Code    int            `json:"code"`
	Message string         `json:"message"`
	Data    map[string]any `json:"data,omitempty"`
}

func (e *rpcError) Error() string {
	if len(e.Data) > 0 {
		return fmt.Sprintf("A2A error %d: %s (%v)", e.Code, e.Message, e.Data)
	}
	return fmt.Sprintf("A2A error %d: %s", e.Code, e.Message)
}

type rpcAnswer struct {
	Result json.RawMessage `json:"result"`
	Error  *rpcError       `json:"error"`
}

// card fetches the agent card at url: url itself when it ends in .json,
// else its well-known path.
func (c *client) card(ctx context.Context, url string) (*a2a.AgentCard, error) {
	if !strings.HasSuffix(url, ".json") {
		url = strings.TrimSuffix(url, "/") + wellKnownCard
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	c.setHeaders(req)
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("agent card %s: %w", url, err)
	}
	defer resp.Body.Close()
	body, err := readBounded(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("agent card %s: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("agent card %s: HTTP %s: %s", url, resp.Status, snippet(body))
	}
	var card a2a.AgentCard
	if err := json.Unmarshal(body, &card); err != nil {
		return nil, fmt.Errorf("agent card %s: %w", url, err)
	}
	if card.URL == "" {
		return nil, fmt.Errorf("agent card %s has no url", url)
	}
	if card.PreferredTransport != "" && card.PreferredTransport != a2a.TransportProtocolJSONRPC {
		ok := false
		for _, i := range card.AdditionalInterfaces {
			if i.Transport == a2a.TransportProtocolJSONRPC {
				card.URL, ok = i.URL, true
				break
			}
		}
		if !ok {
			return nil, fmt.Errorf("agent card %s: the agent speaks %s; agentpool speaks A2A over JSON-RPC only", url, card.PreferredTransport)
		}
	}
	return &card, nil
}

func (c *client) setHeaders(req *http.Request) {
	for k, v := range c.headers {
		req.Header.Set(k, v)
	}
}

// post sends one JSON-RPC request to url.
func (c *client) post(ctx context.Context, url, method string, params any, accept string) (*http.Response, error) {
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": c.seq.Add(1), "method": method, "params": params})
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	c.setHeaders(req)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", accept)
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		b, _ := readBounded(resp.Body)
		return nil, fmt.Errorf("%s: HTTP %s: %s", method, resp.Status, snippet(b))
	}
	return resp, nil
}

// call sends a JSON-RPC request and decodes its result into out.
func (c *client) call(ctx context.Context, url, method string, params, out any) error {
	resp, err := c.post(ctx, url, method, params, "application/json")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := readBounded(resp.Body)
	if err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	var a rpcAnswer
	if err := json.Unmarshal(b, &a); err != nil {
		return fmt.Errorf("%s: not a JSON-RPC answer: %w: %s", method, err, snippet(b))
	}
	if a.Error != nil {
		return fmt.Errorf("%s: %w", method, a.Error)
	}
	return json.Unmarshal(a.Result, out)
}

// send sends a message and yields the task's events: from an event stream
// (message/stream) when the agent streams, else the one answer of
// message/send. The sequence ends at the stream's end, at the first error
// or when ctx ends.
func (c *client) send(ctx context.Context, card *a2a.AgentCard, params *a2a.MessageSendParams) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		if !card.Capabilities.Streaming {
			var raw json.RawMessage
			if err := c.call(ctx, card.URL, methodSend, params, &raw); err != nil {
				yield(nil, err)
				return
			}
			ev, err := a2a.UnmarshalEventJSON(raw)
			yield(ev, err)
			return
		}
		resp, err := c.post(ctx, card.URL, methodStream, params, "text/event-stream")
		if err != nil {
			yield(nil, err)
			return
		}
		defer resp.Body.Close()
		if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
			// An agent may answer a stream request with one JSON answer.
			b, err := readBounded(resp.Body)
			if err == nil {
				var ev a2a.Event
				if ev, err = decodeAnswer(b); err == nil {
					yield(ev, nil)
					return
				}
			}
			yield(nil, fmt.Errorf("%s: %w", methodStream, err))
			return
		}
		for data, err := range sseData(resp.Body) {
			if err != nil {
				yield(nil, fmt.Errorf("%s: %w", methodStream, err))
				return
			}
			ev, err := decodeAnswer(data)
			if !yield(ev, err) || err != nil {
				return
			}
		}
	}
}

// decodeAnswer decodes one JSON-RPC answer whose result is an A2A event.
func decodeAnswer(b []byte) (a2a.Event, error) {
	var a rpcAnswer
	if err := json.Unmarshal(b, &a); err != nil {
		return nil, fmt.Errorf("not a JSON-RPC answer: %w: %s", err, snippet(b))
	}
	if a.Error != nil {
		return nil, a.Error
	}
	return a2a.UnmarshalEventJSON(a.Result)
}

// cancel asks the agent to cancel task id.
func (c *client) cancel(ctx context.Context, card *a2a.AgentCard, id a2a.TaskID) error {
	var t a2a.Task
	return c.call(ctx, card.URL, methodCancel, &a2a.TaskIDParams{ID: id}, &t)
}

// maxEventBytes bounds one answer, one server-sent event, and a card.
const maxEventBytes = 8 << 20

var errTooLarge = fmt.Errorf("the agent sent more than %d bytes in one answer or event", maxEventBytes)

func readBounded(r io.Reader) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, maxEventBytes+1))
	if err == nil && len(b) > maxEventBytes {
		return nil, errTooLarge
	}
	return b, err
}

// sseData yields the data of each server-sent event of r, each at most
// maxEventBytes (a larger one errors.Is errTooLarge).
func sseData(r io.Reader) iter.Seq2[[]byte, error] {
	return func(yield func([]byte, error) bool) {
		for data, err := range member.Events(r, maxEventBytes) {
			if errors.Is(err, member.ErrEventTooLarge) {
				err = errTooLarge
			}
			if !yield(data, err) {
				return
			}
		}
	}
}

// snippet is the start of a body, for an error.
func snippet(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 300 {
		s = s[:300] + "..."
	}
	return s
}
