package pool_test

import (
	"context"
	"strings"
	"testing"

	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/event/eventtest"
	"github.com/agentpool/agentpool/model/human"
	"github.com/agentpool/agentpool/pool"
)

// person answers an input model's questions with a fixed line, and
// keeps the questions.
type person struct{ asked []human.Question }

func (p *person) AskHuman(_ context.Context, q human.Question) (string, error) {
	p.asked = append(p.asked, q)
	return "Blue.", nil
}

// An agent whose model is input is a person in the pool: a delegation to
// it asks the desk's Asker, and with none attached it is a failed tool
// call that says why, which the delegating model reads.
func TestInputModelDelegation(t *testing.T) {
	m, err := config.Parse("agentpool.yaml", []byte(`agents:
  assistant:
    model: {type: test, call_tools: [ask_human], tool_args: {ask_human: {prompt: "Which colour?"}}}
    workers: [human]
  human:
    model: input
    system_prompt: You are the designer.
`))
	if err != nil {
		t.Fatal(err)
	}
	reg := pool.NewRegistry()
	p, err := pool.New(m, pool.Options{Workspace: t.TempDir(), Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	askHuman := func() event.ToolCallComplete {
		t.Helper()
		sink, events := eventtest.Collect()
		res, err := p.RunSink(context.Background(), pool.RunRequest{Node: "assistant", Prompt: "go"}, sink)
		if err != nil {
			t.Fatal(err)
		}
		evs := events()
		if err := eventtest.CheckInvariants(res.SessionID, evs); err != nil {
			t.Fatal(err)
		}
		for _, e := range evs {
			if sid, inner := event.Unwrap(res.SessionID, e); sid == res.SessionID {
				if c, ok := inner.(event.ToolCallComplete); ok && c.ToolName == "ask_human" {
					return c
				}
			}
		}
		t.Fatal("no ask_human result")
		return event.ToolCallComplete{}
	}
	if c := askHuman(); !c.IsError || !strings.Contains(c.ToolResult, human.ErrNobodyToAsk.Error()) {
		t.Errorf("nobody attached: %+v", c)
	}
	who := &person{}
	detach := reg.HumanDesk().Attach(who)
	defer detach()
	if c := askHuman(); c.IsError || !strings.Contains(c.ToolResult, "Blue.") {
		t.Errorf("with a person: %+v", c)
	}
	want := human.Question{System: "You are the designer.", Prompt: "👤 Please respond to: Which colour?", InputPrompt: "Your response: "}
	if len(who.asked) != 1 || who.asked[0] != want {
		t.Errorf("asked %+v", who.asked)
	}
}
