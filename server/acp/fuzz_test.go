package acp

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/agentpool/agentpool/approval"
	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/hook"
	"github.com/agentpool/agentpool/model"
	"github.com/agentpool/agentpool/pool"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/session/memory"
)

// fuzzYAML: a delegating lead, a helper, and a guarded agent whose task
// calls need approval (asked of the client).
const fuzzYAML = `
default_agent: lead
agents:
  lead:
    model:
      type: test
      call_tools: [task]
      tool_args:
        task: {agent_or_team: helper, prompt: "Help.", description: "Helping"}
      custom_output_text: "Lead done."
    tools: [subagent]
  helper:
    model: {type: scripted, turns: [{thinking: "hm ", text: "Helped."}]}
  guarded:
    model:
      type: scripted
      turns:
        - tool_calls: [{name: list_available_nodes, args: {}}]
        - "Guarded done."
    tools: [subagent]
    tool_approval: {list_available_nodes: ask}
`

// fuzzSession is a stored session every fuzz input may load or prompt.
const fuzzSession = "ses_fuzz"

// fuzzLines are the seed messages; a seed is a sequence of them.
var fuzzLines = []string{
	`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{"subagents":{}},"clientInfo":{"name":"fuzz","version":"1"}}}`,
	`{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/w","mcpServers":[]}}`,
	`{"jsonrpc":"2.0","id":3,"method":"session/list","params":{}}`,
	`{"jsonrpc":"2.0","id":4,"method":"session/load","params":{"sessionId":"ses_fuzz","cwd":"/w","mcpServers":[]}}`,
	`{"jsonrpc":"2.0","id":5,"method":"session/prompt","params":{"sessionId":"ses_fuzz","prompt":[{"type":"text","text":"go"},{"type":"resource","resource":{"uri":"file:///a","text":"x"}},{"type":"resource_link","uri":"file:///b","name":"b"}]}}`,
	`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"ses_fuzz"}}`,
	`{"jsonrpc":"2.0","id":"p","method":"session/set_mode","params":{"sessionId":"ses_fuzz","modeId":"guarded"}}`,
	`{"jsonrpc":"2.0","id":6,"method":"session/prompt","params":{"sessionId":"ses_fuzz","prompt":[{"type":"text","text":"guarded"}]}}`,
	`{"jsonrpc":"2.0","id":1,"result":{"outcome":{"outcome":"selected","optionId":"allow_once"}}}`,
	`{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":6}}`,
	`{"jsonrpc":"2.0","id":7,"method":"authenticate","params":{"methodId":"none"}}`,
	`{"jsonrpc":"2.0","id":8,"method":"session/prompt","params":{"sessionId":"ses_unknown","prompt":[{"type":"image","data":"AA=="}]}}`,
	`{"jsonrpc":"2.0","id":null,"method":"nope"}`,
	`{"jsonrpc":"2.0","id":{},"method":"x"}`,
	`{"jsonrpc":"1.0","id":9,"method":"initialize"}`,
	`{"jsonrpc":"2.0","id":10,"error":{"code":-1,"message":"m"}}`,
	`{"jsonrpc":"2.0","result":{}}`,
	`[{"jsonrpc":"2.0","id":11,"method":"session/list"}]`,
	`{"jsonrpc":"2.0","id":12,"method":"session/list","params":[1]}`,
	`{"jsonrpc":"2.0","id":13,"method":"session/list","params":{"cursor":"nope"}}`,
	`{`, `null`, `"text"`, "\r", "",
}

// fuzzPool builds a fresh pool (its own in-memory store) holding the stored
// session fuzzSession, with approvals asked of the client.
func fuzzPool(t testing.TB, m *config.Manifest, srvOpts Options) (*Server, *pool.Pool, *hook.Registry) {
	st := memory.New()
	ctx := context.Background()
	now := time.Unix(1700000000, 0)
	if err := st.CreateSession(ctx, session.Session{ID: fuzzSession, AgentName: "lead", SourceType: event.SourceAgent, Status: session.StatusCompleted, CreatedAt: now, UpdatedAt: now, Metadata: map[string]any{"cwd": "/w"}}); err != nil {
		t.Fatal(err)
	}
	st.AppendMessages(ctx, fuzzSession,
		session.Message{ID: "msg_1", Message: model.UserText("earlier")},
		session.Message{ID: "msg_2", Message: model.Message{Role: model.RoleAssistant, Parts: []model.Part{{Kind: model.PartText, Text: "before"}}}})
	st.AppendEvents(ctx, fuzzSession,
		event.RunStarted{SessionID: fuzzSession, RunID: "run_1", AgentName: "lead"},
		event.PartStart{Index: 0, Part: event.Part{PartKind: event.PartText}},
		event.PartDelta{Index: 0, Delta: event.Delta{PartDeltaKind: event.PartText, ContentDelta: "before"}},
		event.PartEnd{Index: 0},
		event.StreamComplete{Message: event.Message{Role: "assistant", Content: "before"}})
	reg := hook.New(hook.Options{})
	reg.Approvals.ApplyManifest(m)
	b, err := approval.New(approval.Options{})
	if err != nil {
		t.Fatal(err)
	}
	reg.UseBroker(b)
	p, err := pool.New(m, pool.Options{Store: st, Hooks: reg})
	if err != nil {
		t.Fatal(err)
	}
	srvOpts.Pool = p
	srvOpts.Approvals = b
	srv, err := New(srvOpts)
	if err != nil {
		t.Fatal(err)
	}
	return srv, p, reg
}

// FuzzServe feeds arbitrary input to the whole connection: the line
// reader, the JSON-RPC parser and every method. Nothing may panic or hang
// (Serve returns once its input ends, within a bound), and the server only
// ever writes JSON-RPC 2.0 objects, one per line.
func FuzzServe(f *testing.F) {
	m, err := config.Parse("fuzz.yaml", []byte(fuzzYAML))
	if err != nil {
		f.Fatal(err)
	}
	f.Add([]byte(strings.Join(fuzzLines, "\n") + "\n"))
	f.Add([]byte(strings.Join(fuzzLines[:5], "\r\n")))
	for _, l := range fuzzLines {
		f.Add([]byte(l + "\n"))
	}
	f.Add([]byte(fuzzLines[0] + "\n" + strings.Repeat("x", 5000) + "\n" + fuzzLines[2]))
	f.Fuzz(func(t *testing.T, data []byte) {
		srv, p, reg := fuzzPool(t, m, Options{MaxLineBytes: 4096, ProgressInterval: -1, QueueSize: 8})
		defer reg.Close(context.Background())
		defer p.Close()
		var out syncBuffer
		done := make(chan error, 1)
		go func() { done <- srv.Serve(context.Background(), bytes.NewReader(data), &out) }()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("Serve: %v", err)
			}
		case <-time.After(20 * time.Second):
			buf := make([]byte, 1<<20)
			t.Fatalf("Serve did not return after its input ended\n%s", buf[:runtime.Stack(buf, true)])
		}
		checkOutput(t, []byte(out.String()))
	})
}

// checkOutput checks that out is JSON-RPC 2.0 objects, one per line.
func checkOutput(t *testing.T, out []byte) {
	t.Helper()
	if len(out) > 0 && out[len(out)-1] != '\n' {
		t.Fatalf("output does not end with a newline: %q", out[max(0, len(out)-100):])
	}
	for line := range bytes.Lines(out) {
		var msg struct {
			JSONRPC string          `json:"jsonrpc"`
			ID      json.RawMessage `json:"id"`
			Method  string          `json:"method"`
		}
		if err := json.Unmarshal(line, &msg); err != nil {
			t.Fatalf("output line is not a JSON object: %v\n%s", err, line)
		}
		if msg.JSONRPC != "2.0" || (msg.Method == "" && msg.ID == nil) {
			t.Fatalf("output line is no JSON-RPC 2.0 message: %s", line)
		}
	}
}

// FuzzLineReader: the reader splits any input into the lines a plain
// split gives (without "\r\n" or "\n"), reporting exactly the lines longer
// than its maximum as too long, and never returns more than the maximum.
func FuzzLineReader(f *testing.F) {
	f.Add([]byte("a\nbb\r\nccc"), uint16(2))
	f.Add([]byte("\n\n\r\n\r"), uint16(0))
	f.Add([]byte(strings.Repeat("x", 70000)+"\nshort\n"+strings.Repeat("y", 300<<10)), uint16(65535))
	f.Add([]byte("abc\r"), uint16(2))
	f.Fuzz(func(t *testing.T, data []byte, maxLen uint16) {
		limit := int(maxLen%2048) + 1
		if maxLen > 60000 {
			limit = int(maxLen) * 4 // lines longer than bufio's buffer
		}
		type line struct {
			text    string
			tooLong bool
		}
		var want []line
		for rest := data; len(rest) > 0; {
			var p []byte
			if i := bytes.IndexByte(rest, '\n'); i >= 0 {
				p, rest = rest[:i], rest[i+1:]
			} else {
				p, rest = rest, nil
			}
			p = bytes.TrimSuffix(p, []byte("\r"))
			if len(p) > limit {
				want = append(want, line{tooLong: true})
			} else {
				want = append(want, line{text: string(p)})
			}
		}
		lr := newLineReader(bytes.NewReader(data), limit)
		var got []line
		for {
			l, tooLong, err := lr.next()
			if err != nil && err != io.EOF {
				t.Fatal(err)
			}
			if len(l) > limit {
				t.Fatalf("a line of %d bytes, limit %d", len(l), limit)
			}
			if tooLong && l != nil {
				t.Fatal("a too-long line with content")
			}
			if err == io.EOF && l == nil && !tooLong {
				break
			}
			got = append(got, line{string(l), tooLong})
			if err == io.EOF {
				break
			}
		}
		if len(got) != len(want) {
			t.Fatalf("%d lines, want %d", len(got), len(want))
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("line %d: got %.40q (too long %v), want %.40q (too long %v)", i, got[i].text, got[i].tooLong, want[i].text, want[i].tooLong)
			}
		}
	})
}
