package agui

import (
	"bytes"
	"net/http/httptest"
	"runtime"
	"testing"
	"time"

	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/pool"
)

// fuzzYAML: planner delegates to helper, which thinks and answers.
const fuzzYAML = `
default_agent: planner
agents:
  planner:
    model:
      type: test
      call_tools: [task]
      tool_args:
        task: {agent_or_team: helper, prompt: "Help.", description: "Helping"}
      custom_output_text: "Planned."
    tools: [subagent]
  helper:
    model: {type: scripted, turns: [{thinking: "hm ", text: "Helped."}]}
`

// FuzzRunRequest posts arbitrary bodies to the run endpoints. Nothing may
// panic or hang: the handler answers a client error (400, 404, 409, 413,
// 415), or 200 with a complete, valid event stream.
func FuzzRunRequest(f *testing.F) {
	m, err := config.Parse("fuzz.yaml", []byte(fuzzYAML))
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{
		runBody("t1", "Hello"),
		`{"threadId":"t","runId":"r","messages":[{"id":"1","role":"user","content":[{"type":"text","text":"a"},{"type":"binary","data":"x"},{"type":"text","text":"b"}]}]}`,
		`{"threadId":"t","runId":"r","parentRunId":"p","state":null,"tools":[{"name":"x"}],"context":[],"forwardedProps":{},"messages":[{"id":"1","role":"assistant","content":"hi"},{"id":"2","role":"user","content":"go"}]}`,
		`{"threadId":"t","runId":"r","messages":[]}`,
		`{"threadId":"","runId":"r","messages":[{"role":"user","content":"x"}]}`,
		`{"threadId":"t","runId":"r","messages":[{"role":"user","content":5}]}`,
		`{"threadId":"t","runId":"r","messages":[{"content":"x"}]}`,
		`{"threadId":1,"runId":"r","messages":[]}`,
		`{"threadId":"t","runId":"r","messages":null}`,
		`{"threadId":"t","runId":"r","messages":[{"role":"user","content":"   "}]}`,
		`[]`, `null`, ``, `{`, `{"threadId":"t"`, "\xff\xfe",
	} {
		f.Add([]byte(s), uint8(0))
		f.Add([]byte(s), uint8(1))
	}
	paths := []string{"/", "/agents/helper", "/agents/nobody"}
	f.Fuzz(func(t *testing.T, body []byte, route uint8) {
		p, err := pool.New(m, pool.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		s := New(p, Options{MaxBodyBytes: 64 << 10, QueueSize: 8})
		defer s.CancelRuns()
		r := httptest.NewRequest("POST", paths[int(route)%len(paths)], bytes.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		done := make(chan struct{})
		go func() {
			defer close(done)
			s.ServeHTTP(w, r)
		}()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			buf := make([]byte, 1<<20)
			t.Fatalf("the handler hangs\n%s", buf[:runtime.Stack(buf, true)])
		}
		switch w.Code {
		case 200:
			verifyStream(t, parseSSE(t, w.Body.Bytes()), "")
		case 400, 404, 409, 413, 415:
			if !bytes.HasPrefix(w.Body.Bytes(), []byte(`{"error":`)) {
				t.Fatalf("status %d without a JSON error: %s", w.Code, w.Body)
			}
		default:
			t.Fatalf("status %d: %s", w.Code, w.Body)
		}
	})
}
