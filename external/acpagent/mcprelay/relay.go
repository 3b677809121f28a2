package mcprelay

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"
)

// EnvURL is the environment variable that gives `agentpool mcp-relay`
// the URL to relay to.
const EnvURL = "AGENTPOOL_MCP_RELAY_URL"

// Bounds.
const (
	// MaxMessage bounds one message read from stdin: the served
	// endpoint takes 4 MiB per request body.
	MaxMessage = 4 << 20
	// MaxAnswer bounds one answer of the endpoint (a tool's result).
	MaxAnswer = 16 << 20
	// MaxInFlight bounds the requests relayed at once (the served
	// endpoint takes 32 connections).
	MaxInFlight = 16
)

// Options configure Run.
type Options struct {
	URL    string    // the streamable HTTP endpoint (Check)
	Stdin  io.Reader // nil: os.Stdin
	Stdout io.Writer // nil: os.Stdout
	Logger *slog.Logger
	// ParentPID, when not 0, is the process whose death ends the relay
	// (checked every ParentPoll): os.Getppid() at start for the command.
	ParentPID  int
	ParentPoll time.Duration // 0: one second
}

// Check returns an error unless u is an http URL on loopback.
func Check(u string) error {
	p, err := url.Parse(u)
	if err != nil {
		return fmt.Errorf("mcp-relay: the URL %q: %w", u, err)
	}
	if p.Scheme != "http" || p.User != nil {
		return fmt.Errorf("mcp-relay: the URL %q is not an http URL without credentials", u)
	}
	host := p.Hostname()
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("mcp-relay: the URL %q is not on loopback (127.0.0.1, ::1 or localhost)", u)
	}
	return nil
}

// relay is one run: the HTTP client and what the server told it.
type relay struct {
	url    string
	client *http.Client
	log    *slog.Logger

	outMu sync.Mutex
	out   io.Writer

	mu        sync.Mutex
	sessionID string // Mcp-Session-Id, once the server gave one
	version   string // the protocol version initialize negotiated
}

// Run relays stdin to the URL and the answers to stdout until stdin
// ends, ctx ends or the parent process is gone.
func Run(ctx context.Context, o Options) error {
	if err := Check(o.URL); err != nil {
		return err
	}
	if o.Stdin == nil {
		o.Stdin = os.Stdin
	}
	if o.Stdout == nil {
		o.Stdout = os.Stdout
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if o.ParentPID != 0 {
		go watchParent(ctx, cancel, o.ParentPID, o.ParentPoll)
	}
	r := &relay{
		url: o.URL, log: o.Logger, out: o.Stdout,
		client: &http.Client{
			Transport: &http.Transport{Proxy: nil, DialContext: (&net.Dialer{Timeout: 10 * time.Second}).DialContext, MaxIdleConnsPerHost: MaxInFlight},
			// A redirect could lead off loopback: none is followed.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
	}
	defer r.client.CloseIdleConnections()
	defer r.endSession()

	// Stdin is read by a goroutine of its own, so that the end of ctx
	// (the parent gone) ends Run even while a read blocks.
	lines := make(chan []byte)
	readErr := make(chan error, 1)
	go func() { readErr <- readLines(ctx, o.Stdin, lines) }()

	var wg sync.WaitGroup
	defer wg.Wait()
	slots := make(chan struct{}, MaxInFlight)
	for {
		var line []byte
		select {
		case line = <-lines:
		case err := <-readErr:
			cancel()
			return err
		case <-ctx.Done():
			return nil
		}
		if line == nil { // a message over MaxMessage
			r.write(errorAnswer(nil, fmt.Sprintf("mcp-relay: a message over %d bytes is not relayed", MaxMessage)))
			continue
		}
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			return nil
		}
		wg.Add(1)
		go func() {
			defer func() { <-slots; wg.Done() }()
			r.relay(ctx, line)
		}()
	}
}

// readLines sends each non-empty line of in (nil for one over
// MaxMessage) until in ends (nil error) or ctx ends.
func readLines(ctx context.Context, in io.Reader, lines chan<- []byte) error {
	br := bufio.NewReaderSize(in, 64<<10)
	for {
		line, over, err := readLine(br)
		if len(bytes.TrimSpace(line)) > 0 || over {
			if over {
				line = nil
			}
			select {
			case lines <- line:
			case <-ctx.Done():
				return nil
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("mcp-relay: read stdin: %w", err)
		}
	}
}

// readLine reads one line; a line over MaxMessage is read to its end and
// dropped (over).
func readLine(br *bufio.Reader) (line []byte, over bool, err error) {
	for {
		chunk, isPrefix, err := br.ReadLine()
		if !over {
			if len(line)+len(chunk) > MaxMessage {
				over, line = true, nil
			} else {
				line = append(line, chunk...)
			}
		}
		if err != nil || !isPrefix {
			return line, over, err
		}
	}
}

// watchParent cancels when the parent process is gone: this process was
// given another parent (its parent died).
func watchParent(ctx context.Context, cancel context.CancelFunc, pid int, every time.Duration) {
	if every <= 0 {
		every = time.Second
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			if os.Getppid() != pid {
				cancel()
				return
			}
		}
	}
}

// endSession ends the server's MCP session, if it gave one, as a client
// that is done does (DELETE), within a second.
func (r *relay) endSession() {
	r.mu.Lock()
	sid := r.sessionID
	r.mu.Unlock()
	if sid == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, r.url, nil)
	if err != nil {
		return
	}
	req.Header.Set("Mcp-Session-Id", sid)
	if resp, err := r.client.Do(req); err == nil {
		resp.Body.Close()
	}
}

// message is what the relay reads of a JSON-RPC message.
type message struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		Meta map[string]any `json:"_meta"`
	} `json:"params"`
	Result struct {
		ProtocolVersion string `json:"protocolVersion"`
	} `json:"result"`
}

// isRequest reports whether m expects an answer.
func (m message) isRequest() bool { return m.Method != "" && len(m.ID) > 0 && string(m.ID) != "null" }

// relay POSTs one message and writes the answer's messages.
func (r *relay) relay(ctx context.Context, line []byte) {
	var m message
	if err := json.Unmarshal(line, &m); err != nil {
		r.write(errorAnswer(nil, "mcp-relay: the message is not JSON-RPC: "+err.Error()))
		return
	}
	if err := r.post(ctx, line, m); err != nil {
		if ctx.Err() != nil {
			return // the relay ends: nobody reads the answer
		}
		r.log.Warn("mcp-relay: relay a message", "method", m.Method, "err", err)
		if m.isRequest() {
			r.write(errorAnswer(m.ID, "mcp-relay: "+err.Error()))
		}
	}
}

func (r *relay) post(ctx context.Context, body []byte, m message) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	version, _ := m.Params.Meta["io.modelcontextprotocol/protocolVersion"].(string)
	r.mu.Lock()
	if version == "" && m.Method != "initialize" {
		version = r.version
	}
	if r.sessionID != "" {
		req.Header.Set("Mcp-Session-Id", r.sessionID)
	}
	r.mu.Unlock()
	if version != "" {
		req.Header.Set("MCP-Protocol-Version", version)
	}
	resp, err := r.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if sid := resp.Header.Get("Mcp-Session-Id"); sid != "" {
		r.mu.Lock()
		r.sessionID = sid
		r.mu.Unlock()
	}
	body2 := io.LimitReader(resp.Body, MaxAnswer+1)
	ct := resp.Header.Get("Content-Type")
	switch {
	case resp.StatusCode == http.StatusAccepted:
		return nil
	case resp.StatusCode/100 != 2:
		// The server may answer a JSON-RPC error with an error status.
		if strings.HasPrefix(ct, "application/json") {
			if data, _ := io.ReadAll(body2); r.answer(data, m) {
				return nil
			}
		}
		return fmt.Errorf("the server answered %s", resp.Status)
	case strings.HasPrefix(ct, "text/event-stream"):
		return r.events(body2, m)
	default:
		data, err := io.ReadAll(body2)
		if err != nil {
			return err
		}
		if len(data) > MaxAnswer {
			return fmt.Errorf("an answer over %d bytes is not relayed", MaxAnswer)
		}
		if len(bytes.TrimSpace(data)) == 0 {
			if m.isRequest() {
				return errors.New("the server answered nothing")
			}
			return nil
		}
		if !r.answer(data, m) {
			return errors.New("the server's answer is not JSON")
		}
		return nil
	}
}

// events writes the data of each event of an event stream.
func (r *relay) events(body io.Reader, m message) error {
	br := bufio.NewReaderSize(body, 64<<10)
	var data []byte
	total := 0
	for {
		line, over, err := readLine(br)
		total += len(line)
		if over || total > MaxAnswer {
			return fmt.Errorf("an answer over %d bytes is not relayed", MaxAnswer)
		}
		switch {
		case len(line) == 0: // the event's end
			if len(data) > 0 {
				r.answer(data, m)
				data = nil
			}
		case bytes.HasPrefix(line, []byte("data:")):
			if len(data) > 0 {
				data = append(data, '\n')
			}
			data = append(data, bytes.TrimPrefix(bytes.TrimPrefix(line, []byte("data:")), []byte(" "))...)
		}
		if err == io.EOF {
			if len(data) > 0 {
				r.answer(data, m)
			}
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// answer writes one JSON-RPC message of the server as a line, and keeps
// the protocol version an initialize answer negotiated; false when data
// is not JSON.
func (r *relay) answer(data []byte, m message) bool {
	var b bytes.Buffer
	if err := json.Compact(&b, data); err != nil {
		return false
	}
	if m.Method == "initialize" {
		var a message
		if json.Unmarshal(b.Bytes(), &a) == nil && a.Result.ProtocolVersion != "" {
			r.mu.Lock()
			r.version = a.Result.ProtocolVersion
			r.mu.Unlock()
		}
	}
	r.write(b.Bytes())
	return true
}

// write writes one message and its newline at once.
func (r *relay) write(msg []byte) {
	r.outMu.Lock()
	defer r.outMu.Unlock()
	if _, err := r.out.Write(append(msg, '\n')); err != nil {
		r.log.Warn("mcp-relay: write stdout", "err", err)
	}
}

// errorAnswer is a JSON-RPC error answer to id (null when unknown).
func errorAnswer(id json.RawMessage, msg string) []byte {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	b, _ := json.Marshal(map[string]any{
		"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": -32603, "message": msg},
	})
	return b
}
