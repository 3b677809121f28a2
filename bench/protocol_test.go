package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/agentpool/agentpool/server/acp"
	"github.com/agentpool/agentpool/server/agui"
	"github.com/agentpool/agentpool/spawn"
)

// Protocol encoding, through the exported API of the protocol servers.

// BenchmarkProtocolEncode encodes one wrapped text delta per op, as each
// server writes it to its client:
//
//   - agui-sse: an AG-UI TEXT_MESSAGE_CONTENT event attributed to a
//     subagent, as one server-sent event (agui.Event.AppendSSE);
//   - acp-update: an ACP session/update notification carrying an
//     agent_message_chunk, as one JSON-RPC line (the server's writer does
//     json.Marshal of the same envelope and appends a newline).
func BenchmarkProtocolEncode(b *testing.B) {
	b.Run("agui-sse", func(b *testing.B) {
		e := &agui.Event{
			Type: agui.TypeTextMessageContent, Timestamp: 1764460800000, SubagentRunID: "ses_7f3a9c0e21ffe6QmZ0bW1NKD3f9a",
			MessageID: "msg_0c5f63d8e001Hq7cW8l2aTQp0D", Delta: "token ",
		}
		var buf []byte
		b.ReportAllocs()
		for b.Loop() {
			buf = e.AppendSSE(buf[:0])
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
	})
	b.Run("acp-update", func(b *testing.B) {
		type notification struct {
			JSONRPC string `json:"jsonrpc"`
			Method  string `json:"method"`
			Params  any    `json:"params,omitempty"`
		}
		n := notification{JSONRPC: "2.0", Method: "session/update", Params: acp.SessionNotification{
			SessionID: "ses_7f3a9c0e21ffe6QmZ0bW1NKD3f9a",
			Update:    acp.ChunkUpdate{SessionUpdate: "agent_message_chunk", Content: acp.ContentBlock{Type: "text", Text: "token "}},
		}}
		b.ReportAllocs()
		for b.Loop() {
			out, err := json.Marshal(n)
			if err != nil {
				b.Fatal(err)
			}
			_ = append(out, '\n')
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
	})
}

// BenchmarkProtocolStream is a whole AG-UI run over HTTP (in process, no
// socket): POST a RunAgentInput; the root agent spawns a child that emits
// 1000 part_delta events; the server maps every event to AG-UI and streams
// it as SSE. events/s counts the SSE events the client receives.
func BenchmarkProtocolStream(b *testing.B) {
	b.Run("agui", func(b *testing.B) {
		p, err := NewSpawnerPool(nil, []spawn.Node{&Emitter{N: pipelineEvents, Text: "token "}})
		if err != nil {
			b.Fatal(err)
		}
		srv := agui.New(p, agui.Options{})
		run := func(i int) int {
			body := fmt.Sprintf(`{"threadId":"thread-%d","runId":"run-%d","messages":[{"id":"m1","role":"user","content":"emit"}]}`, i, i)
			req := httptest.NewRequestWithContext(context.Background(), http.MethodPost, "/", bytes.NewReader([]byte(body)))
			req.Header.Set("Content-Type", "application/json")
			rec := httptest.NewRecorder()
			srv.ServeHTTP(rec, req)
			if rec.Code != http.StatusOK {
				b.Fatalf("status %d: %s", rec.Code, rec.Body.String())
			}
			out := rec.Body.Bytes()
			if !bytes.Contains(out, []byte(`"RUN_FINISHED"`)) {
				b.Fatalf("no RUN_FINISHED in %.300s", out)
			}
			return bytes.Count(out, []byte("data: "))
		}
		run(-1)
		events, i := 0, 0
		b.ReportAllocs()
		for b.Loop() {
			events += run(i)
			i++
		}
		b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
		b.ReportMetric(float64(events)/float64(b.N), "sse-events/op")
	})
	b.Run("acp", func(b *testing.B) {
		b.Skip("pending: an ACP stdio session (initialize, session/new, session/prompt) driven in process; the update encoding is measured by BenchmarkProtocolEncode/acp-update")
	})
}
