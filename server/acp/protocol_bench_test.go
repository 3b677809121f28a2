package acp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentpool/agentpool/bench"
	"github.com/agentpool/agentpool/pool"
	"github.com/agentpool/agentpool/spawn"
)

// pipelineEvents is how many part_delta events the child of
// BenchmarkProtocolStream emits per op (as in package bench).
const pipelineEvents = 1000

// BenchmarkProtocolEncode encodes one wrapped text delta per op as the
// writer does: a session/update notification carrying an
// agent_message_chunk, as one JSON-RPC line, encoded with one json.Encoder
// into a reused buffer from a struct that holds the update by value (no
// boxing, no copy of the result). The AG-UI counterpart is in server/agui.
func BenchmarkProtocolEncode(b *testing.B) {
	b.Run("acp-update", func(b *testing.B) {
		type notification struct {
			JSONRPC string `json:"jsonrpc"`
			Method  string `json:"method"`
			Params  struct {
				SessionID string      `json:"sessionId"`
				Update    chunkUpdate `json:"update"`
			} `json:"params"`
		}
		n := &notification{JSONRPC: "2.0", Method: "session/update"}
		n.Params.SessionID = "ses_7f3a9c0e21ffe6QmZ0bW1NKD3f9a"
		n.Params.Update = chunkUpdate{SessionUpdate: "agent_message_chunk", Content: contentBlock{Type: "text", Text: "token "}}
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf) // appends the newline
		// The same line as json.Marshal of the generic envelope.
		want, err := json.Marshal(struct {
			JSONRPC string `json:"jsonrpc"`
			Method  string `json:"method"`
			Params  any    `json:"params,omitempty"`
		}{"2.0", "session/update", sessionNotification{SessionID: n.Params.SessionID, Update: n.Params.Update}})
		if err != nil {
			b.Fatal(err)
		}
		if err := enc.Encode(n); err != nil || buf.String() != string(want)+"\n" {
			b.Fatalf("encoded %q (%v), want %s", buf.String(), err, want)
		}
		b.ReportAllocs()
		for b.Loop() {
			buf.Reset()
			if err := enc.Encode(n); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
	})
}

// BenchmarkProtocolStream is a whole run through the ACP server, in
// process: the root agent spawns a child that emits 1000 part_delta
// events, over two io.Pipes (see acpClient): initialize once, then per op a
// session/new and one session/prompt, read until its response (a new
// session per op, as the AG-UI benchmark uses a new thread per run, so that
// no history grows from op to op). events/s counts the session/update
// notifications received.
func BenchmarkProtocolStream(b *testing.B) {
	b.Run("acp", func(b *testing.B) {
		c, err := startACP(pipelineEvents)
		if err != nil {
			b.Fatal(err)
		}
		defer func() {
			if err := c.close(); err != nil {
				b.Error(err)
			}
		}()
		if _, err := c.prompt(nil); err != nil { // warm up
			b.Fatal(err)
		}
		updates := 0
		b.ReportAllocs()
		for b.Loop() {
			if err := c.newSession(); err != nil {
				b.Fatal(err)
			}
			n, err := c.prompt(nil)
			if err != nil {
				b.Fatal(err)
			}
			updates += n
		}
		b.ReportMetric(float64(updates)/b.Elapsed().Seconds(), "events/s")
		b.ReportMetric(float64(updates)/float64(b.N), "updates/op")
	})
}

// TestProtocolStreamACP runs the ACP workload of BenchmarkProtocolStream
// once with a small emitter and checks what the client receives: every
// delta of the child as its own agent_message_chunk, the spawn's lifecycle,
// and the prompt's answer end_turn after all of it.
func TestProtocolStreamACP(t *testing.T) {
	const n = 10
	c, err := startACP(n)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := c.close(); err != nil {
			t.Error(err)
		}
	}()
	for run := range 2 { // the second prompt on the session streams the same
		kinds := map[string]int{}
		var childText strings.Builder
		updates, err := c.prompt(func(line []byte) error {
			var m struct {
				Params struct {
					SessionID string `json:"sessionId"`
					Update    struct {
						SessionUpdate string          `json:"sessionUpdate"`
						Content       json.RawMessage `json:"content"` // a block in chunks, a list in tool calls
					} `json:"update"`
				} `json:"params"`
			}
			if err := json.Unmarshal(line, &m); err != nil {
				return err
			}
			u := m.Params.Update
			kinds[u.SessionUpdate]++
			if u.SessionUpdate == updateAgentMessageChunk && m.Params.SessionID != c.sid {
				var b contentBlock
				if err := json.Unmarshal(u.Content, &b); err != nil {
					return err
				}
				childText.WriteString(b.Text)
			}
			return nil
		})
		if err != nil {
			t.Fatalf("prompt %d: %v", run, err)
		}
		// The child's n chunks; the spawn_children tool call and its
		// completion; the spawn tool call and its end; subagent_update
		// running and idle; the root's answer "ok"; on the first prompt,
		// the session's title.
		want := map[string]int{
			updateAgentMessageChunk: n + 1,
			updateToolCall:          2,
			updateToolCallUpdate:    2,
			updateSubagent:          2,
		}
		if run == 0 {
			want[updateSessionInfo] = 1
		}
		total := 0
		for _, k := range want {
			total += k
		}
		if updates != total || !maps.Equal(kinds, want) {
			t.Errorf("prompt %d: %d updates %v, want %d %v", run, updates, kinds, total, want)
		}
		if got := childText.String(); got != strings.Repeat("token ", n) {
			t.Errorf("prompt %d: the child's chunks carry %q", run, got)
		}
	}
}

// acpClient plays an ACP client in process: a Server serves a
// spawner pool (the root spawns an Emitter) over two io.Pipes, no
// subprocess, no socket. The client advertises clientCapabilities.subagents,
// so every delta of the child reaches it as an agent_message_chunk of the
// child session (as every delta is an SSE event in the AG-UI variant); the
// spawn tool call's progress is only sent at part ends
// (ProgressInterval < 0), so the updates of a prompt do not depend on
// timing.
type acpClient struct {
	pool *pool.Pool
	in   *io.PipeWriter // client -> server
	outR *io.PipeReader // server -> client
	out  *bufio.Reader
	done chan error // Serve's return
	id   int64
	sid  string
	req  []byte
}

// startACP starts the server, initializes and opens one session.
func startACP(events int) (*acpClient, error) {
	p, err := bench.NewSpawnerPool(nil, []spawn.Node{&bench.Emitter{N: events, Text: "token "}})
	if err != nil {
		return nil, err
	}
	srv, err := New(Options{Pool: p, ProgressInterval: -1})
	if err != nil {
		p.Close()
		return nil, err
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	c := &acpClient{pool: p, in: inW, outR: outR, out: bufio.NewReaderSize(outR, 1<<20), done: make(chan error, 1)}
	go func() {
		err := srv.Serve(context.Background(), inR, outW)
		outW.Close() // the client reads EOF
		inR.Close()  // a client write fails instead of blocking
		c.done <- err
	}()
	if _, err := c.call("initialize", `{"protocolVersion":1,"clientCapabilities":{"subagents":{}},"clientInfo":{"name":"bench","version":"0"}}`); err != nil {
		return c, errors.Join(err, c.close())
	}
	if err := c.newSession(); err != nil {
		return c, errors.Join(err, c.close())
	}
	return c, nil
}

// newSession opens a new ACP session; later prompts go to it.
func (c *acpClient) newSession() error {
	res, err := c.call("session/new", `{"cwd":"/","mcpServers":[]}`)
	if err != nil {
		return err
	}
	var r struct {
		SessionID string `json:"sessionId"`
	}
	if err := json.Unmarshal(res, &r); err != nil {
		return err
	}
	if r.SessionID == "" {
		return fmt.Errorf("session/new: no sessionId in %s", res)
	}
	c.sid = r.SessionID
	return nil
}

// send writes one request and returns its id's prefix of the response
// line ({"jsonrpc":"2.0","id":<id>,).
func (c *acpClient) send(method, params string) ([]byte, error) {
	c.id++
	c.req = append(c.req[:0], `{"jsonrpc":"2.0","id":`...)
	c.req = strconv.AppendInt(c.req, c.id, 10)
	c.req = append(c.req, `,"method":"`...)
	c.req = append(c.req, method...)
	c.req = append(c.req, `","params":`...)
	c.req = append(c.req, params...)
	c.req = append(c.req, '}', '\n')
	if _, err := c.in.Write(c.req); err != nil {
		return nil, fmt.Errorf("%s: write: %w", method, err)
	}
	return strconv.AppendInt([]byte(`{"jsonrpc":"2.0","id":`), c.id, 10), nil
}

var updatePrefix = []byte(`{"jsonrpc":"2.0","method":"session/update","params":`)

// wait reads lines until the response that starts with resp and returns
// its result, counting the session/update notifications before it (each
// passed to onUpdate when not nil). An error names the line it is about.
func (c *acpClient) wait(method string, resp []byte, onUpdate func(line []byte) error) (json.RawMessage, int, error) {
	updates := 0
	for {
		line, err := c.out.ReadSlice('\n')
		if err != nil {
			return nil, updates, fmt.Errorf("%s: after %d updates: read: %w (partial line %.300q)", method, updates, err, line)
		}
		switch {
		case bytes.HasPrefix(line, updatePrefix):
			updates++
			if onUpdate != nil {
				if err := onUpdate(line); err != nil {
					return nil, updates, fmt.Errorf("%s: update %d: %w: %.300s", method, updates, err, line)
				}
			}
		case bytes.HasPrefix(line, resp) && len(line) > len(resp) && (line[len(resp)] == ',' || line[len(resp)] == '}'):
			var r struct {
				Result json.RawMessage `json:"result"`
				Error  *rpcError       `json:"error"`
			}
			if err := json.Unmarshal(line, &r); err != nil {
				return nil, updates, fmt.Errorf("%s: bad response: %w: %.300s", method, err, line)
			}
			if r.Error != nil {
				return nil, updates, fmt.Errorf("%s: %w: %.300s", method, r.Error, line)
			}
			return r.Result, updates, nil
		default:
			return nil, updates, fmt.Errorf("%s: unexpected line after %d updates: %.300s", method, updates, line)
		}
	}
}

func (c *acpClient) call(method, params string) (json.RawMessage, error) {
	resp, err := c.send(method, params)
	if err != nil {
		return nil, err
	}
	res, n, err := c.wait(method, resp, nil)
	if err == nil && n != 0 {
		err = fmt.Errorf("%s: %d unexpected updates", method, n)
	}
	return res, err
}

// prompt sends one session/prompt and reads until its response; it returns
// the number of session/update notifications received and fails unless
// the prompt ended with end_turn.
func (c *acpClient) prompt(onUpdate func(line []byte) error) (int, error) {
	resp, err := c.send("session/prompt", `{"sessionId":"`+c.sid+`","prompt":[{"type":"text","text":"emit"}]}`)
	if err != nil {
		return 0, err
	}
	res, n, err := c.wait("session/prompt", resp, onUpdate)
	if err != nil {
		return n, err
	}
	var r struct {
		StopReason string `json:"stopReason"`
	}
	if err := json.Unmarshal(res, &r); err != nil || r.StopReason != stopEndTurn {
		return n, fmt.Errorf("session/prompt: stopReason %q, want %q (%v): %.300s", r.StopReason, stopEndTurn, err, res)
	}
	return n, nil
}

// close ends the input, reads the output to its end and waits for Serve
// to return, then closes the pool.
func (c *acpClient) close() error {
	c.in.Close()
	drained := make(chan struct{})
	go func() { // the last replies, until Serve closes the output
		defer close(drained)
		_, _ = io.Copy(io.Discard, c.outR)
	}()
	var err error
	select {
	case err = <-c.done:
		if err != nil {
			err = fmt.Errorf("Serve: %w", err)
		}
		<-drained // the output is closed before done is sent
	case <-time.After(10 * time.Second):
		err = errors.New("Serve did not return within 10s of the end of its input")
	}
	c.outR.Close()
	return errors.Join(err, c.pool.Close())
}
