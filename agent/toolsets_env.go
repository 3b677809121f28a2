package agent

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentpool/agentpool/spawn"
	"github.com/agentpool/agentpool/tool"
)

// toolsetEnv is implemented by a spawn.Env whose run must not do I/O (a
// durable engine's workflow): the agent's toolsets (MCP servers) are
// listed through it, where they run (on Temporal, an activity on a worker
// calls ListToolsets), and their calls go through Env.Tool, whose side
// finds them with ToolsetTool. An Env that does not implement it gets a
// toolset_error for each toolset. Only the durable engine implements it:
// its contract is internal/durablewire.ToolsetEnv, which has this method
// set.
type toolsetEnv interface {
	ListToolsets(ctx context.Context, inv *spawn.Invocation, agent string) ([]ToolsetList, error)
}

// ToolsetList is what one toolset of an agent gave: its tools, or the
// error that kept it from giving them.
type ToolsetList struct {
	Name  string      `json:"name"`
	Tools []tool.Info `json:"tools,omitempty"`
	Error string      `json:"error,omitempty"`
}

// errNoEnvToolsets is the error of a toolset a durable engine's run cannot
// have.
var errNoEnvToolsets = errors.New("toolsets are not available under a durable execution engine")

// envToolset returns the tools of toolset i of a run under an Env, from
// what its toolsetEnv listed (own is how many are the agent's own; the
// rest come from the run's context and are not listed).
func envToolset(listed []ToolsetList, listErr error, i, own int) ([]tool.Tool, error) {
	switch {
	case i >= own:
		return nil, errNoEnvToolsets
	case listErr != nil:
		return nil, listErr
	case i >= len(listed):
		return nil, errNoEnvToolsets
	}
	l := listed[i]
	if l.Error != "" {
		return nil, errors.New(l.Error)
	}
	out := make([]tool.Tool, len(l.Tools))
	for k, info := range l.Tools {
		out[k] = listedTool{info: info}
	}
	return out, nil
}

// listedTool is a tool of a toolset listed by a toolsetEnv: the run
// offers it to the model, and its calls go through the Env (Env.Tool),
// never here.
type listedTool struct{ info tool.Info }

func (t listedTool) Info() tool.Info { return t.info }

func (t listedTool) Call(context.Context, tool.Call) (tool.Result, error) {
	return tool.Result{}, fmt.Errorf("tool %s of a toolset runs through the run's Env", t.info.Name)
}

// ListToolsets asks each of the agent's toolsets for its tools (what a
// toolsetEnv's side does where the toolsets run).
func (a *Agent) ListToolsets(ctx context.Context) []ToolsetList {
	out := make([]ToolsetList, len(a.cfg.Toolsets))
	for i, ts := range a.cfg.Toolsets {
		out[i].Name = ts.Name()
		got, err := ts.Tools(ctx)
		if err != nil {
			out[i].Error = err.Error()
			continue
		}
		for _, t := range got {
			out[i].Tools = append(out[i].Tools, t.Info())
		}
	}
	return out
}

// ToolsetTool finds the tool of that name among the agent's toolsets: the
// one a run offers when two have it (toolsFor puts each toolset's tools
// before those of the toolsets before it, and the first wins).
func (a *Agent) ToolsetTool(ctx context.Context, name string) (tool.Tool, bool) {
	for i := len(a.cfg.Toolsets) - 1; i >= 0; i-- {
		ts := a.cfg.Toolsets[i]
		got, err := ts.Tools(ctx)
		if err != nil {
			continue
		}
		for _, t := range got {
			if t.Info().Name == name {
				return t, true
			}
		}
	}
	return nil, false
}
