package acp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
)

// JSON-RPC and ACP error codes (spec/PROTOCOLS.md §1).
const (
	codeParseError       = -32700
	codeInvalidRequest   = -32600
	codeMethodNotFound   = -32601
	codeInvalidParams    = -32602
	codeInternalError    = -32603
	codeRequestCancelled = -32800
	codeAuthRequired     = -32000
	codeResourceNotFound = -32002
)

// DefaultMaxLineBytes is the longest line (one JSON-RPC message, without its
// line ending) the server accepts.
const DefaultMaxLineBytes = 32 << 20

// rpcError is a JSON-RPC error object.
type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
}

func (e *rpcError) Error() string { return fmt.Sprintf("jsonrpc error %d: %s", e.Code, e.Message) }

func errorf(code int, format string, args ...any) *rpcError {
	return &rpcError{Code: code, Message: fmt.Sprintf(format, args...)}
}

func invalidParams(format string, args ...any) *rpcError {
	return errorf(codeInvalidParams, "Invalid params: "+format, args...)
}

func sessionNotFound(id string) *rpcError {
	return &rpcError{Code: codeResourceNotFound, Message: "Resource not found: session " + id, Data: map[string]any{"sessionId": id}}
}

var nullID = json.RawMessage("null")

// response is an outgoing JSON-RPC response. ID is always present (null
// when the request's id could not be read).
type response struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  any             `json:"result,omitempty"`
	Error   *rpcError       `json:"error,omitempty"`
}

// outRequest is an outgoing request or notification.
type outRequest struct {
	JSONRPC string `json:"jsonrpc"`
	ID      *int64 `json:"id,omitempty"`
	Method  string `json:"method"`
	Params  any    `json:"params,omitempty"`
}

// incoming is a decoded incoming message of any kind.
type incoming struct {
	id       json.RawMessage // nil when absent
	method   string
	params   json.RawMessage // nil when absent
	result   json.RawMessage
	err      *rpcError
	response bool // a response to one of our requests
}

// lineReader reads newline-delimited messages of up to max bytes with a
// bufio.Reader; longer lines are consumed and reported, never buffered whole.
type lineReader struct {
	br  *bufio.Reader
	max int
	buf []byte
}

func newLineReader(r io.Reader, max int) *lineReader {
	return &lineReader{br: bufio.NewReaderSize(r, 256<<10), max: max}
}

// next returns the next line without its line ending. tooLong reports a
// line longer than max (its content is dropped). err is io.EOF after the
// last line.
func (lr *lineReader) next() (line []byte, tooLong bool, err error) {
	if cap(lr.buf) > 1<<20 {
		lr.buf = nil // do not keep a huge buffer after a huge line
	}
	lr.buf = lr.buf[:0]
	n := 0
	for {
		frag, rerr := lr.br.ReadSlice('\n')
		n += len(frag)
		if !tooLong {
			// max+2 leaves room for "\r\n".
			if n > lr.max+2 {
				tooLong = true
				lr.buf = lr.buf[:0]
			} else {
				if need := len(lr.buf) + len(frag); need > cap(lr.buf) {
					// Double (append grows large slices by only 1.25x,
					// which copies a 32 MiB line many times over).
					grown := make([]byte, len(lr.buf), min(max(2*cap(lr.buf), need, 4096), lr.max+2))
					copy(grown, lr.buf)
					lr.buf = grown
				}
				lr.buf = append(lr.buf, frag...)
			}
		}
		switch {
		case rerr == nil:
			return lr.finish(tooLong, nil)
		case errors.Is(rerr, bufio.ErrBufferFull):
			continue
		default:
			if n == 0 {
				return nil, false, rerr
			}
			return lr.finish(tooLong, rerr)
		}
	}
}

func (lr *lineReader) finish(tooLong bool, err error) ([]byte, bool, error) {
	if tooLong {
		return nil, true, err
	}
	line := bytes.TrimSuffix(lr.buf, []byte("\n"))
	line = bytes.TrimSuffix(line, []byte("\r"))
	if len(line) > lr.max {
		return nil, true, err
	}
	return line, false, err
}

// parseMessage decodes one line. A non-nil *rpcError is the error response to
// send, with id (null when unknown).
func parseMessage(line []byte) (incoming, json.RawMessage, *rpcError) {
	switch line[0] {
	case '[':
		if json.Valid(line) {
			return incoming{}, nullID, errorf(codeInvalidRequest, "Invalid request: JSON-RPC batches are not supported")
		}
	case '{':
	default:
		if json.Valid(line) {
			return incoming{}, nullID, errorf(codeInvalidRequest, "Invalid request: a message must be a JSON object")
		}
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(line, &fields); err != nil {
		return incoming{}, nullID, errorf(codeParseError, "Parse error: %v", err)
	}
	var m incoming
	if raw, ok := fields["id"]; ok {
		if !validID(raw) {
			return incoming{}, nullID, errorf(codeInvalidRequest, "Invalid request: id must be a string, a number or null")
		}
		m.id = raw
	}
	respID := m.id
	if respID == nil {
		respID = nullID
	}
	if v, ok := fields["jsonrpc"]; !ok || string(bytes.TrimSpace(v)) != `"2.0"` {
		return incoming{}, respID, errorf(codeInvalidRequest, `Invalid request: "jsonrpc" must be "2.0"`)
	}
	if raw, ok := fields["method"]; ok {
		if err := json.Unmarshal(raw, &m.method); err != nil || m.method == "" {
			return incoming{}, respID, errorf(codeInvalidRequest, "Invalid request: method must be a non-empty string")
		}
		if p, ok := fields["params"]; ok && !bytes.Equal(bytes.TrimSpace(p), []byte("null")) {
			m.params = p
		}
		return m, respID, nil
	}
	_, hasResult := fields["result"]
	rawErr, hasError := fields["error"]
	if m.id != nil && hasResult != hasError {
		m.response = true
		m.result = fields["result"]
		if hasError {
			m.err = &rpcError{}
			if err := json.Unmarshal(rawErr, m.err); err != nil {
				m.err = &rpcError{Code: codeInternalError, Message: "malformed error object"}
			}
		}
		return m, respID, nil
	}
	if m.id == nil && (hasResult || hasError) {
		// A response without an id: nothing to answer (JSON-RPC forbids
		// answering a response).
		m.response = true
		return m, nil, nil
	}
	return incoming{}, respID, errorf(codeInvalidRequest, "Invalid request: no method")
}

func validID(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return false
	}
	switch raw[0] {
	case '"':
		var s string
		return json.Unmarshal(raw, &s) == nil
	case 'n':
		return string(raw) == "null"
	default:
		var n json.Number
		return json.Unmarshal(raw, &n) == nil
	}
}

// decodeParams decodes a request's params into v. Absent params decode as
// an empty object, so required fields are checked by the caller.
func decodeParams(raw json.RawMessage, v any) *rpcError {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		raw = json.RawMessage("{}")
	}
	if raw[0] != '{' {
		return invalidParams("params must be an object")
	}
	if err := json.Unmarshal(raw, v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return invalidParams("%s: expected %s, got %s", te.Field, te.Type, te.Value)
		}
		return invalidParams("%v", err)
	}
	return nil
}

// caller sends requests to the client and matches the responses.
type caller struct {
	mu      sync.Mutex
	next    int64
	pending map[int64]chan incoming
	closed  bool
	out     *outbox
}

// errClosed fails calls made after, or pending when, the input ended.
var errClosed = errors.New("acp: connection closed")

// call sends a request in owner's queue (after what is queued there) and
// waits for its response or ctx.
func (c *caller) call(ctx context.Context, owner, method string, params, result any) error {
	_, wait, err := c.start(owner, method, params)
	if err != nil {
		return err
	}
	return wait(ctx, result)
}

// start queues a request in owner's queue and returns its id (for a
// $/cancel_request) and the function that waits for its response (it must
// be called).
func (c *caller) start(owner, method string, params any) (id int64, wait func(ctx context.Context, result any) error, err error) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return 0, nil, errClosed
	}
	c.next++
	id = c.next
	ch := make(chan incoming, 1)
	c.pending[id] = ch
	c.mu.Unlock()
	forget := func() {
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
	}
	if err := c.out.send(owner, outRequest{JSONRPC: "2.0", ID: &id, Method: method, Params: params}); err != nil {
		forget()
		return 0, nil, err
	}
	return id, func(ctx context.Context, result any) error {
		defer forget()
		return c.await(ctx, ch, method, result)
	}, nil
}

func (c *caller) await(ctx context.Context, ch chan incoming, method string, result any) error {
	select {
	case m, ok := <-ch:
		if !ok {
			return errClosed
		}
		if m.err != nil {
			return m.err
		}
		if result != nil {
			if err := json.Unmarshal(m.result, result); err != nil {
				return fmt.Errorf("acp: decode %s result: %w", method, err)
			}
		}
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// deliver routes a response to its pending call; it reports false for an
// unknown id.
func (c *caller) deliver(m incoming) bool {
	id, err := strconv.ParseInt(string(bytes.TrimSpace(m.id)), 10, 64)
	if err != nil {
		return false
	}
	c.mu.Lock()
	ch, ok := c.pending[id]
	if ok {
		delete(c.pending, id)
	}
	c.mu.Unlock()
	if ok {
		ch <- m
	}
	return ok
}

// abandoned reports whether id is one of the server's own requests that
// is no longer awaited (its caller's context ended first).
func (c *caller) abandoned(rawID json.RawMessage) bool {
	id, err := strconv.ParseInt(string(bytes.TrimSpace(rawID)), 10, 64)
	if err != nil {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return id > 0 && id <= c.next
}

// close fails every pending and future call.
func (c *caller) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	for id, ch := range c.pending {
		close(ch)
		delete(c.pending, id)
	}
}
