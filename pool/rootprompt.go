package pool

import (
	"context"
	"fmt"

	"github.com/agentpool/agentpool/agent"
	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/spawn"
)

// rootNode is the node a root run runs. An agent submits its own prompt
// (agent/prompt-submit) and stops through agent/turn-stop; any other node
// run as the root (a team) gets neither on its own, since its members are
// children with prompts of their own. So that the user's prompt of every
// root run reaches agent/prompt-submit (Claude Code's UserPromptSubmit) and
// its end reaches agent/turn-stop (Stop), such a node runs behind a
// rootGate.
func (p *Pool) rootNode(n spawn.Node) spawn.Node {
	if p.hooks == nil {
		return n
	}
	if _, ok := n.(*agent.Agent); ok {
		return n
	}
	return rootGate{Node: n, hooks: p.hooks}
}

// rootGate runs a root node that is not an agent between the hooks an
// agent calls itself: agent/prompt-submit with the user's prompt before it
// runs (a block ends the run with an error, as it does an agent's; extra
// context is put before the prompt its members get) and agent/turn-stop
// with its output when it completed (a decision to continue is not
// honoured: the node has no turn to continue).
type rootGate struct {
	spawn.Node
	hooks agent.Hooks
}

func (g rootGate) Run(ctx context.Context, inv *spawn.Invocation) spawn.Result {
	if inv.Prompt != "" {
		d := g.hooks.PromptSubmit(ctx, agent.PromptInfo{Agent: g.Name(), SessionID: inv.Session.ID, Content: inv.Prompt})
		if d.Block {
			err := fmt.Errorf("prompt blocked: %s", d.Reason)
			inv.Sink.Emit(event.RunStarted{SessionID: inv.Session.ID, RunID: inv.RunID, AgentName: g.Name()})
			inv.Sink.Emit(event.RunError{Message: err.Error(), Code: "blocked", RunID: inv.RunID, AgentName: g.Name()})
			return spawn.Result{StopReason: event.StopError, Err: err}
		}
		if d.Context != "" {
			inv.Prompt = d.Context + "\n\n" + inv.Prompt
		}
	}
	res := g.Node.Run(ctx, inv)
	if res.StopReason == event.StopCompleted || (res.StopReason == "" && res.Err == nil) {
		if d := g.hooks.TurnStop(ctx, agent.TurnStopInfo{Agent: g.Name(), SessionID: inv.Session.ID, FinalMessage: res.Output}); d.Continue {
			inv.Runtime.Logger().Warn("a hook asked a root team to continue; it has no turn to continue and stops", "node", g.Name(), "session", inv.Session.ID)
		}
	}
	return res
}
