package durable

import (
	"context"
	"iter"
	"strings"
	"sync"
	"testing"

	"go.temporal.io/sdk/testsuite"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/model"
	"github.com/agentpool/agentpool/model/testmodel"
	"github.com/agentpool/agentpool/pool"
	"github.com/agentpool/agentpool/spawn"
	"github.com/agentpool/agentpool/tool"
)

// recordingModel keeps the text of every request's last message.
type recordingModel struct {
	model.Model
	mu   sync.Mutex
	last []string
}

func (m *recordingModel) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
	m.mu.Lock()
	if n := len(req.Messages); n > 0 {
		m.last = append(m.last, req.Messages[n-1].Text())
	}
	m.mu.Unlock()
	return m.Model.Stream(ctx, req)
}

// A person's message signalled to a running session's workflow
// (SignalMessage, as durable.MessageSession sends it) is read at the
// session's next model request and shows in its stream, as in this
// process.
func TestMessageSignalReachesTheSession(t *testing.T) {
	look := tool.New("look", "looks", func(context.Context, tool.Call, noArgs) (tool.Result, error) {
		return tool.Result{Content: "seen"}, nil
	})
	rec := &recordingModel{Model: scripted(t,
		testmodel.Turn{ToolCalls: []testmodel.ToolCall{{Name: "look", Args: map[string]any{}}}},
		testmodel.Turn{Text: "done"},
	)}
	p, err := pool.Build(pool.Config{Agents: []pool.AgentSpec{{Name: "boss", Model: rec, Tools: []tool.Tool{look}}}, Default: "boss"}, pool.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	_, out, evs := runWorkflow(t, p, "boss", "go", func(env *testsuite.TestWorkflowEnvironment) {
		// Fires once the workflow first waits: on the first model call.
		env.RegisterDelayedCallback(func() {
			env.SignalWorkflow(SignalMessage, MessageSignal{By: "opencode", Text: "also check the tests"})
		}, 0)
	})
	if out.StopReason != event.StopCompleted {
		t.Fatalf("the run ended %s (%s)", out.StopReason, out.Error)
	}
	var shown bool
	for _, e := range evs {
		if c, ok := e.(event.Custom); ok && c.EventType == spawn.EventSessionMessage && c.EventData["text"] == "also check the tests" {
			shown = true
		}
	}
	if !shown {
		t.Error("the stream has no session_message with the text")
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.last) != 2 || !strings.Contains(rec.last[1], "Message from the user (from opencode):\n\nalso check the tests") {
		t.Errorf("the model's requests ended with %q", rec.last)
	}
}
