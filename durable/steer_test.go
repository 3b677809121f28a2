package durable

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/event/eventtest"
	"github.com/agentpool/agentpool/model"
	"github.com/agentpool/agentpool/pool"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/spawn"
)

// fnModel answers each request with what fn makes of it: text, or tool
// calls (name, JSON arguments).
type fnModel struct {
	id string
	fn func(ctx context.Context, req *model.Request) (text string, calls [][2]string)
}

func (m fnModel) ID() string { return m.id }

func (m fnModel) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
	return func(yield func(model.Chunk, error) bool) {
		text, calls := m.fn(ctx, req)
		if err := ctx.Err(); err != nil {
			yield(model.Chunk{}, context.Cause(ctx))
			return
		}
		if text != "" && !yield(model.Chunk{Kind: model.ChunkText, Text: text}, nil) {
			return
		}
		for i, c := range calls {
			if !yield(model.Chunk{Kind: model.ChunkToolCall, Index: i, ToolCallID: fmt.Sprintf("call_%d_%d", len(req.Messages), i), ToolName: c[0], ArgsDelta: c[1]}, nil) {
				return
			}
		}
		finish := model.FinishStop
		if len(calls) > 0 {
			finish = model.FinishToolCalls
		}
		yield(model.Chunk{Kind: model.ChunkFinish, FinishReason: finish}, nil)
	}
}

// toolResults maps the tool results of req to their tool's name.
func toolResults(req *model.Request) map[string][]string {
	names := map[string]string{}
	out := map[string][]string{}
	for _, m := range req.Messages {
		for _, p := range m.Parts {
			switch p.Kind {
			case model.PartToolCall:
				names[p.ToolCallID] = p.ToolName
			case model.PartToolResult:
				out[names[p.ToolCallID]] = append(out[names[p.ToolCallID]], p.Text)
			}
		}
	}
	return out
}

// steerPool: boss starts two background tasks, the sleeper (which runs
// until it is cancelled) and helper (whose first turn waits until the
// boss has messaged it); then stops the sleeper with task_stop and
// messages helper with send_message; helper answers the message at its
// next turn; the boss ends once both have.
func steerPool(t *testing.T, st session.Store) *pool.Pool {
	t.Helper()
	release := make(chan struct{})
	var once sync.Once
	boss := fnModel{"boss", func(_ context.Context, req *model.Request) (string, [][2]string) {
		res := toolResults(req)
		switch {
		case len(res["task"]) == 0:
			return "", [][2]string{
				{"task", `{"agent_or_team":"sleeper","prompt":"wait","async_mode":true}`},
				{"task", `{"agent_or_team":"helper","prompt":"work","async_mode":true}`},
			}
		case len(res["task_stop"]) == 0:
			var sids []string
			for _, r := range res["task"] {
				var v struct {
					SessionID string `json:"session_id"`
				}
				_ = json.Unmarshal([]byte(r), &v)
				sids = append(sids, v.SessionID)
			}
			return "", [][2]string{
				{"task_stop", `{"session_id":"` + sids[0] + `"}`},
				{"send_message", `{"session_id":"` + sids[1] + `","message":"also check the tests"}`},
			}
		}
		// The message is sent: helper may go on.
		once.Do(func() { close(release) })
		return "boss done", nil
	}}
	helper := fnModel{"helper", func(ctx context.Context, req *model.Request) (string, [][2]string) {
		if len(req.Messages) == 1 {
			select {
			case <-release:
			case <-ctx.Done():
			}
			return "helper first", nil
		}
		return "helper got: " + req.Messages[len(req.Messages)-1].Text(), nil
	}}
	p, err := pool.Build(pool.Config{
		Agents: []pool.AgentSpec{
			{Name: "boss", Model: boss, Builtin: []string{"subagent"}},
			{Name: "helper", Model: helper},
		},
		Nodes:   []spawn.Node{sleeper{}},
		Default: "boss",
	}, pool.Options{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// A parent's task_stop and send_message on the dev server: the stopped
// background child ends aborted with the words of task_stop (a
// cancellation of its workflow), the messaged one reads the parent's
// message at its next turn (a signal to its workflow), and the parent
// completes with both ends delivered.
func TestParentSteersChildrenOnDevServer(t *testing.T) {
	t.Parallel() // its own dev server and store; mostly waits
	addr := startDevServer(t)
	st := openTestDB(t, testDB(t))
	p := steerPool(t, st)
	c := dialTest(t, addr)
	const queue = "agentpool-steer"
	startLocalWorker(t, c, queue, p, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sink, got := eventtest.Collect()
	node, _ := p.Node("boss")
	root, out, err := RunRoot(ctx, c, st, RootRequest{Node: node, Prompt: "go", TaskQueue: queue}, sink)
	if err != nil || out.StopReason != event.StopCompleted || out.Output != "boss done" {
		t.Fatalf("run: %+v, %v", out, err)
	}
	evs := got()
	if err := eventtest.CheckInvariants(root, evs); err != nil {
		t.Errorf("invariants: %v", err)
	}
	ends := map[string]event.SpawnSessionEnd{}
	for _, e := range evs {
		if end, ok := e.(event.SpawnSessionEnd); ok {
			ends[end.SourceName] = end
		}
	}
	if e := ends["sleeper"]; e.StopReason != event.StopAborted || !strings.Contains(e.Error, "was stopped by its parent agent boss (task_stop)") {
		t.Errorf("the sleeper's end: %s %q", e.StopReason, e.Error)
	}
	if e := ends["helper"]; e.StopReason != event.StopCompleted ||
		!strings.Contains(e.LastAssistantMessage, "helper got: Message from your parent agent boss (session "+root+"):\n\nalso check the tests") {
		t.Errorf("helper's end: %s %q", e.StopReason, e.LastAssistantMessage)
	}
	msgs, err := st.Messages(ctx, root)
	if err != nil {
		t.Fatal(err)
	}
	var stopped, sent string
	names := map[string]string{}
	for _, m := range msgs {
		for _, part := range m.Parts {
			switch part.Kind {
			case model.PartToolCall:
				names[part.ToolCallID] = part.ToolName
			case model.PartToolResult:
				switch names[part.ToolCallID] {
				case "task_stop":
					stopped = part.Text
				case "send_message":
					sent = part.Text
				}
			}
		}
	}
	if !strings.Contains(stopped, `"status":"aborted"`) || !strings.Contains(stopped, `"stopped":"sleeper (session `) {
		t.Errorf("task_stop's result: %s", stopped)
	}
	if !strings.Contains(sent, `"status":"running"`) || !strings.Contains(sent, "queued") {
		t.Errorf("send_message's result: %s", sent)
	}
}
