package agent_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentpool/agentpool/agent"
	"github.com/agentpool/agentpool/approval"
	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/model"
	"github.com/agentpool/agentpool/model/testmodel"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/spawn"
	"github.com/agentpool/agentpool/tool"
)

// resumer is Hooks that answer every stored request with allow, and
// nothing else.
type resumer struct{ asked []string }

func (*resumer) PromptSubmit(context.Context, agent.PromptInfo) agent.PromptDecision {
	return agent.PromptDecision{}
}
func (*resumer) ModelRequest(_ context.Context, _, _ string, req *model.Request) *model.Request {
	return req
}
func (*resumer) PreTool(context.Context, agent.ToolInfo) agent.ToolDecision {
	return agent.ToolDecision{}
}
func (*resumer) PostTool(_ context.Context, _ agent.ToolInfo, res tool.Result) tool.Result {
	return res
}
func (*resumer) TurnStop(context.Context, agent.TurnStopInfo) agent.StopDecision {
	return agent.StopDecision{}
}
func (r *resumer) ResumeApproval(_ context.Context, t agent.ToolInfo, req approval.Request) agent.ToolDecision {
	r.asked = append(r.asked, req.ID+" "+string(t.Input))
	return agent.ToolDecision{Action: agent.ToolAllow, UpdatedInput: t.Input}
}

// A continued run settles the open calls of its last turn without a new
// run_started: a call with a logged result keeps it (its tool does not
// run), the waiting one is asked again and runs with the input asked
// about, any other gets the interrupted error; the model then takes its
// next turn with every result, in call order.
func TestContinueTurn(t *testing.T) {
	var runs atomic.Int64
	probe := tool.New("probe", "Echo.", func(_ context.Context, c tool.Call, a echoArgs) (tool.Result, error) {
		runs.Add(1)
		return tool.Result{Content: "probe " + a.Text}, nil
	})
	m, err := testmodel.New(testmodel.Config{Turns: []testmodel.Turn{{Text: "unused"}, {Text: "done"}}})
	if err != nil {
		t.Fatal(err)
	}
	hooks := &resumer{}
	a, err := agent.New(agent.Config{Name: "writer", Model: m, Tools: []tool.Tool{probe}, Hooks: hooks})
	if err != nil {
		t.Fatal(err)
	}
	call := func(id, text string) model.Part {
		return model.Part{Kind: model.PartToolCall, ToolCallID: id, ToolName: "probe", Args: json.RawMessage(`{"text":"` + text + `"}`)}
	}
	turn := model.Message{Role: model.RoleAssistant, Parts: []model.Part{call("c1", "kept"), call("c2", "model's"), call("c3", "lost")}}
	c := &spawn.Continuation{
		History: []model.Message{model.UserText("go"), turn},
		Waiting: &session.Waiting{
			Session:  session.Session{ID: "ses_root"},
			RunID:    "run_1",
			Requests: map[string]approval.Request{"c2": {ID: "per_1", CallID: "c2", Input: json.RawMessage(`{"text":"asked"}`)}},
			Results:  map[string]event.ToolCallComplete{"c1": {ToolCallID: "c1", ToolName: "probe", ToolResult: "probe kept"}},
		},
	}
	if err := a.CanContinue(c); err != nil {
		t.Fatal(err)
	}
	res, rec, st := runAgentWith(t, context.Background(), a, "", func(inv *spawn.Invocation) {
		inv.History, inv.Continue = c.History, c
	})
	if res.StopReason != event.StopCompleted || res.Output != "done" {
		t.Fatalf("result %+v", res)
	}
	if got := strings.Join(rec.kinds(), " "); strings.Contains(got, "run_started") || strings.Count(got, "tool_call_complete") != 2 {
		t.Errorf("events: %s (no run_started; the completes of c2 and c3 only)", got)
	}
	if runs.Load() != 1 || !slices.Equal(hooks.asked, []string{`per_1 {"text":"asked"}`}) {
		t.Errorf("probe ran %d times; asked %v", runs.Load(), hooks.asked)
	}
	msgs, err := st.Messages(context.Background(), "ses_root")
	if err != nil || len(msgs) != 2 {
		t.Fatalf("stored: %d messages %v (the results, then the answer)", len(msgs), err)
	}
	var got []string
	for _, p := range msgs[0].Parts {
		got = append(got, p.ToolCallID+"="+p.Text)
	}
	if want := []string{"c1=probe kept", "c2=probe asked", "c3=" + session.InterruptedResult}; !slices.Equal(got, want) {
		t.Errorf("results %v, want %v", got, want)
	}
}

// CanContinue refuses what the agent cannot go on with.
func TestCanContinue(t *testing.T) {
	a, err := agent.New(agent.Config{Name: "writer", Model: scripted(t)})
	if err != nil {
		t.Fatal(err)
	}
	turn := model.Message{Role: model.RoleAssistant, Parts: []model.Part{{Kind: model.PartToolCall, ToolCallID: "c1", ToolName: "x"}}}
	w := func(req string) *session.Waiting {
		return &session.Waiting{Requests: map[string]approval.Request{req: {ID: "per_1"}}}
	}
	for name, c := range map[string]*spawn.Continuation{
		"no turn":    {Waiting: w("c1"), History: []model.Message{model.UserText("go")}},
		"other call": {Waiting: w("c9"), History: []model.Message{turn}},
		"no waiting": {History: []model.Message{turn}},
		"lost child": {Waiting: &session.Waiting{Children: []*session.Waiting{{Start: event.SpawnSessionStart{ToolCallID: "c1", ChildSessionID: "k"}}}}, History: []model.Message{turn}},
	} {
		if err := a.CanContinue(c); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}
