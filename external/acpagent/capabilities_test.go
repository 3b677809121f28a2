package acpagent_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/external/acpagent"
)

// Usage and cost are the agent's when it reports them: the usage of its
// session/prompt answer and the cost of its last usage_update (a
// cumulative amount, in USD), on the child's stream_complete, its result
// and its stored session.
func TestUsageAndCostAsTheAgentReports(t *testing.T) {
	p, _ := testPool(t, nil, testAgentNode(t, acpagent.Config{}))
	res, evs := run(t, context.Background(), p, "tester", "usage", nil)
	if res.Result.StopReason != event.StopCompleted {
		t.Fatalf("result %+v", res.Result)
	}
	want := event.Usage{InputTokens: 120, OutputTokens: 30, CacheReadTokens: 10, ReasoningTokens: 5}
	var done *event.StreamComplete
	for _, e := range evs {
		if v, ok := e.(event.StreamComplete); ok {
			done = &v
		}
	}
	if done == nil || done.Message.Usage != want || done.Message.Cost != 0.5 {
		t.Errorf("stream_complete %+v", done)
	}
	if res.Result.Usage != want || res.Result.Cost != 0.5 {
		t.Errorf("result usage %+v cost %v", res.Result.Usage, res.Result.Cost)
	}
	s, err := p.Store().GetSession(context.Background(), res.SessionID)
	if err != nil || s.Usage.InputTokens != 120 || s.Usage.OutputTokens != 30 || s.Cost != 0.5 {
		t.Errorf("stored session %+v, %v", s, err)
	}
}

// allow_file_operations and allow_terminal: when on, initialize offers
// fs/read_text_file, fs/write_text_file and terminals, and a read is
// served; when off, none is offered and a request for one is refused
// ("method not found") without reading anything.
func TestClientCapabilitiesFollowTheSwitches(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(file, []byte("remember the milk\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, on := range []bool{true, false} {
		node := testAgentNode(t, acpagent.Config{Dir: dir, AllowFileOperations: on, AllowTerminal: on})
		p, _ := testPool(t, allow, node)
		res, _ := run(t, context.Background(), p, "tester", "read "+file, nil)
		if res.Result.StopReason != event.StopCompleted {
			t.Fatalf("on=%v: result %+v", on, res.Result)
		}
		r := replyOf(t, res.Result)
		if r.FsRead != on || r.FsWrite != on || r.Terminal != on {
			t.Errorf("on=%v: initialize offered fs read %v, write %v, terminal %v", on, r.FsRead, r.FsWrite, r.Terminal)
		}
		switch {
		case on && (r.Error != "" || r.Output != "remember the milk\n"):
			t.Errorf("read with allow_file_operations: %+v", r)
		case !on && (r.Output != "" || !strings.Contains(r.Error, "allow_file_operations is off")):
			t.Errorf("read without allow_file_operations: %+v", r)
		}
		if !on {
			// A terminal/create is refused the same way.
			res, _ := run(t, context.Background(), p, "tester", "run "+terminalRequest(t, map[string]any{"command": "true"}), nil)
			if r := replyOf(t, res.Result); r.ID != "" || r.Error == "" {
				t.Errorf("terminal/create without allow_terminal: %+v", r)
			}
		}
	}
}
