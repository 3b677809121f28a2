package pool_test

import (
	"context"
	"fmt"
	"iter"
	"strings"
	"sync"
	"testing"

	"github.com/agentpool/agentpool/agent"
	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/event/eventtest"
	"github.com/agentpool/agentpool/model"
	"github.com/agentpool/agentpool/model/testmodel"
	"github.com/agentpool/agentpool/pool"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/session/memory"
)

// compactionManifest: a lead with a small context window reads three
// long parts through a child (each result about 1,000 tokens), which
// passes its compaction threshold, then delegates to "flood", whose
// window holds its tool definitions (about 1,000 tokens) but not them and
// the one part it reads: flood fails with
// context_exhausted and the lead answers.
func compactionManifest() string {
	part := strings.Repeat("lorem ipsum dolor sit amet ", 150) // 4,050 bytes
	return fmt.Sprintf(`default_agent: lead
agents:
  lead:
    tools: [subagent]
    model:
      type: scripted
      context_window: 5000
      compact_threshold: 0.6
      turns:
        - tool_calls: [{name: task, args: {agent_or_team: reader, prompt: "part 1"}}]
        - tool_calls: [{name: task, args: {agent_or_team: reader, prompt: "part 2"}}]
        - tool_calls: [{name: task, args: {agent_or_team: reader, prompt: "part 3"}}]
        - tool_calls: [{name: task, args: {agent_or_team: flood, prompt: "read it all"}}]
        - "done: parts read, flood failed"
  reader:
    model: {type: scripted, turns: [%q]}
  flood:
    tools: [subagent]
    model:
      type: scripted
      context_window: 1200
      turns:
        - tool_calls: [{name: task, args: {agent_or_team: reader, prompt: "all"}}]
        - "never reached"
`, part)
}

// TestCompactionThenContextExhausted: the lead's conversation passes its
// threshold and is compacted (a compaction event in its log, the next
// request smaller, the scripted answer goes on at the turn it had
// reached); a child whose latest tool result alone passes its window ends
// with context_exhausted, and the lead's tool result names it. The
// original messages stay in the store, and the session's stored view (what
// a later run is given) starts with the summary.
func TestCompactionThenContextExhausted(t *testing.T) {
	m, err := config.Parse("compact.yaml", []byte(compactionManifest()))
	if err != nil {
		t.Fatal(err)
	}
	st := memory.New()
	p, err := pool.New(m, pool.Options{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()

	var (
		mu          sync.Mutex
		evs         []event.Event
		root        string
		compactions []event.Custom
		floodEnd    *event.SpawnSessionEnd
		floodResult string
		floodChild  string
		floodRead   int // bytes of flood's tool result
	)
	sink := event.SinkFunc(func(e event.Event) {
		mu.Lock()
		defer mu.Unlock()
		if _, ok := e.(event.PartDelta); ok {
			return
		}
		evs = append(evs, e)
		if rs, ok := e.(event.RunStarted); ok && root == "" {
			root = rs.SessionID
		}
		sid, inner := event.Unwrap(root, e)
		switch v := inner.(type) {
		case event.Custom:
			if v.EventType == agent.EventCompaction && sid == root {
				compactions = append(compactions, v)
			}
		case event.SpawnSessionStart:
			if v.SourceName == "flood" {
				floodChild = v.ChildSessionID
			}
		case event.SpawnSessionEnd:
			if v.ChildSessionID == floodChild {
				floodEnd = &v
			}
		case event.ToolCallComplete:
			if sid == floodChild {
				floodRead = len(v.ToolResult)
			}
			if sid == root && strings.Contains(v.ToolResult, floodChild) && floodChild != "" {
				floodResult = v.ToolResult
			}
		}
	})
	ctx := context.Background()
	res, err := p.RunSink(ctx, pool.RunRequest{Prompt: "read the parts"}, sink)
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if err := eventtest.CheckInvariants(res.SessionID, evs); err != nil {
		t.Fatal(err)
	}
	if res.Result.StopReason != event.StopCompleted || res.Result.Output != "done: parts read, flood failed" {
		t.Fatalf("lead ended %s with %q (%v)", res.Result.StopReason, res.Result.Output, res.Result.Err)
	}
	if len(compactions) == 0 {
		t.Fatal("no compaction event in the lead's session")
	}
	c := compactions[0].EventData
	before, after := c["tokens_before"].(int), c["tokens_after"].(int)
	if c["trigger"] != agent.CompactAuto || after >= before || !strings.HasPrefix(c["summary"].(string), "Test model summary of ") {
		t.Errorf("compaction %v: want trigger auto, fewer tokens after, the test model's summary", c)
	}
	if floodRead < 4000 {
		t.Errorf("flood read %d bytes before it ended, want its child's whole answer", floodRead)
	}
	if floodEnd == nil || floodEnd.StopReason != event.StopContextExhausted || !strings.Contains(floodEnd.Error, "context window exhausted") {
		t.Fatalf("flood's end: %+v", floodEnd)
	}
	if !strings.Contains(floodResult, `"stop_reason":"context_exhausted"`) || !strings.Contains(floodResult, "context window exhausted") {
		t.Errorf("the lead's tool result does not name context_exhausted: %s", floodResult)
	}

	// The store keeps every message, and the session's stored view starts
	// with the summary.
	stored, err := st.Messages(ctx, res.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(stored); n != 1+2*4+1 { // prompt, 4 × (call, result), answer
		t.Errorf("%d messages stored, want 10 (none removed by compaction)", n)
	}
	sess, err := st.GetSession(ctx, res.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	view := session.CompactedHistory(sess, stored)
	if len(view) >= len(stored) || !strings.HasPrefix(view[0].Text(), session.SummaryPrefix) || view[0].Role != model.RoleUser {
		t.Errorf("stored view: %d messages (of %d), first %q", len(view), len(stored), view[0].Text())
	}
}

// requests is a model that records the messages of every request it is
// sent, and answers as the model it wraps.
type requests struct {
	model.Model
	mu   sync.Mutex
	seen [][]model.Message
}

func (r *requests) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
	r.mu.Lock()
	r.seen = append(r.seen, req.Messages)
	r.mu.Unlock()
	return r.Model.Stream(ctx, req)
}

func (r *requests) last() []model.Message {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.seen[len(r.seen)-1]
}

// TestManualCompactionAndReload: RunRequest.Compact summarises a stored
// session's older turns (trigger manual, the run's answer is the
// summary, the messages stay), and the session's next run sends the
// summary and the kept turns, not the whole conversation.
func TestManualCompactionAndReload(t *testing.T) {
	tm, err := testmodel.New(testmodel.Config{Turns: []testmodel.Turn{{Text: "answer one"}}})
	if err != nil {
		t.Fatal(err)
	}
	rm := &requests{Model: tm}
	st := memory.New()
	p, err := pool.Build(pool.Config{Agents: []pool.AgentSpec{{Name: "solo", Model: rm}}}, pool.Options{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx := context.Background()
	first, err := p.RunSink(ctx, pool.RunRequest{Prompt: "first question"}, event.Discard)
	if err != nil {
		t.Fatal(err)
	}
	sid := first.SessionID
	for _, q := range []string{"second question", "third question"} {
		if _, err := p.RunSink(ctx, pool.RunRequest{SessionID: sid, Prompt: q}, event.Discard); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := p.RunSink(ctx, pool.RunRequest{SessionID: sid, Prompt: "x", Compact: &pool.CompactRequest{}}, event.Discard); err == nil {
		t.Error("a compaction with a prompt was accepted")
	}

	res, err := p.RunSink(ctx, pool.RunRequest{SessionID: sid, Compact: &pool.CompactRequest{Instructions: "Keep the questions."}}, event.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if res.Result.StopReason != event.StopCompleted || !strings.HasPrefix(res.Result.Output, "Test model summary of 4 messages.") {
		t.Fatalf("compaction ended %s with %q (%v)", res.Result.StopReason, res.Result.Output, res.Result.Err)
	}
	recs, err := st.Events(ctx, sid, 0)
	if err != nil {
		t.Fatal(err)
	}
	var trigger any
	for _, r := range recs {
		if c, ok := r.Event.(event.Custom); ok && c.EventType == agent.EventCompaction {
			trigger = c.EventData["trigger"]
		}
	}
	if trigger != agent.CompactManual {
		t.Errorf("compaction event trigger %v, want manual", trigger)
	}
	stored, err := st.Messages(ctx, sid)
	if err != nil {
		t.Fatal(err)
	}
	if len(stored) != 6 {
		t.Errorf("%d messages stored, want the 6 of three turns", len(stored))
	}

	if _, err := p.RunSink(ctx, pool.RunRequest{SessionID: sid, Prompt: "fourth question"}, event.Discard); err != nil {
		t.Fatal(err)
	}
	sent := rm.last()
	// The summary, the kept latest turn (third question, its answer), the
	// new prompt.
	if len(sent) != 4 || !strings.HasPrefix(sent[0].Text(), session.SummaryPrefix) || sent[1].Text() != "third question" || sent[3].Text() != "fourth question" {
		var b strings.Builder
		for _, m := range sent {
			fmt.Fprintf(&b, "\n  %s: %.60q", m.Role, m.Text())
		}
		t.Errorf("the run after the compaction sent:%s", b.String())
	}
}
