package agui

import (
	"bytes"
	"context"
	"fmt"
	"github.com/agentpool/agentpool/server/agui/internal/wire"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/agentpool/agentpool/bench"
	"github.com/agentpool/agentpool/spawn"
)

// pipelineEvents is how many part_delta events the child of
// BenchmarkProtocolStream emits per op (as in package bench).
const pipelineEvents = 1000

// BenchmarkProtocolEncode encodes one wrapped text delta per op as the
// server writes it: an AG-UI TEXT_MESSAGE_CONTENT event attributed to a
// subagent, as one server-sent event. The ACP counterpart is in server/acp.
func BenchmarkProtocolEncode(b *testing.B) {
	b.Run("agui-sse", func(b *testing.B) {
		e := &wire.Event{
			Type: wire.TypeTextMessageContent, Timestamp: 1764460800000, SubagentRunID: "ses_7f3a9c0e21ffe6QmZ0bW1NKD3f9a",
			MessageID: "msg_0c5f63d8e001Hq7cW8l2aTQp0D", Delta: "token ",
		}
		var buf []byte
		b.ReportAllocs()
		for b.Loop() {
			buf = e.AppendSSE(buf[:0])
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
	})
}

// BenchmarkProtocolStream is a whole run through the AG-UI server over
// HTTP (httptest, no socket): the root agent spawns a child that emits 1000
// part_delta events; per op, POST a RunAgentInput on a new thread; the
// server maps every event to AG-UI and streams it as SSE. events/s counts
// the SSE events the client receives.
func BenchmarkProtocolStream(b *testing.B) {
	b.Run("agui", func(b *testing.B) {
		p, err := bench.NewSpawnerPool(nil, []spawn.Node{&bench.Emitter{N: pipelineEvents, Text: "token "}})
		if err != nil {
			b.Fatal(err)
		}
		srv := New(p, Options{})
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
}
