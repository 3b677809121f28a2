// The agent's tools: collecting them for a run, and running the calls of a turn.

package agent

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/model"
	"github.com/agentpool/agentpool/spawn"
	"github.com/agentpool/agentpool/tool"
)

// EventToolsetError is the custom event type of a toolset that could not
// give its tools to a run (event_data: toolset, error).
const EventToolsetError = "toolset_error"

// toolsFor returns the tools of a run under ctx: the agent's own, the tools
// of its toolsets, and the extra tools the context carries (tool.WithExtra),
// each name once (the first wins).
func (a *Agent) toolsFor(ctx context.Context, sink event.Sink) (map[string]tool.Tool, []model.ToolSpec) {
	extra := tool.ExtraFrom(ctx)
	toolsets := append(a.cfg.Toolsets[:len(a.cfg.Toolsets):len(a.cfg.Toolsets)], tool.ToolsetsFrom(ctx)...)
	var (
		inv     *spawn.Invocation
		listed  []ToolsetList // the agent's toolsets, listed by a ToolsetEnv
		listErr error
	)
	if len(toolsets) > 0 {
		inv = spawn.InvocationFrom(ctx)
	}
	if inv != nil && inv.Env != nil && len(a.cfg.Toolsets) > 0 {
		if te, ok := inv.Env.(ToolsetEnv); ok {
			listed, listErr = te.ListToolsets(ctx, inv, a.cfg.Name)
		}
	}
	for i, ts := range toolsets {
		if inv != nil && inv.Env != nil {
			// Asking a toolset is I/O, which a durable engine's
			// deterministic run cannot do: its Env lists the agent's
			// own toolsets where they run (a worker), and runs their
			// calls there too; a context's toolsets (a client's) are not
			// there.
			got, err := envToolset(listed, listErr, i, len(a.cfg.Toolsets))
			if err != nil {
				sink.Emit(event.Custom{EventType: EventToolsetError, Source: "agent", EventData: map[string]any{
					"agent": a.cfg.Name, "toolset": ts.Name(), "error": err.Error(),
				}})
				continue
			}
			extra = append(got, extra...)
			continue
		}
		got, err := ts.Tools(ctx)
		if err != nil {
			sink.Emit(event.Custom{EventType: EventToolsetError, Source: "agent", EventData: map[string]any{
				"agent": a.cfg.Name, "toolset": ts.Name(), "error": err.Error(),
			}})
			continue
		}
		extra = append(got[:len(got):len(got)], extra...)
	}
	if len(extra) == 0 {
		return a.tools, a.specs
	}
	tools := make(map[string]tool.Tool, len(a.tools)+len(extra))
	for k, v := range a.tools {
		tools[k] = v
	}
	specs := slices.Clip(a.specs)
	for _, t := range extra {
		info := t.Info()
		if _, dup := tools[info.Name]; dup {
			continue
		}
		tools[info.Name] = t
		specs = append(specs, toolSpec(info))
	}
	return tools, specs
}

func toolSpec(info tool.Info) model.ToolSpec {
	params := info.Parameters
	if len(params) == 0 {
		params = json.RawMessage(`{"type":"object","properties":{}}`)
	}
	return model.ToolSpec{Name: info.Name, Description: info.Description, Parameters: params}
}

// runTools runs the calls of one response, concurrently when there are
// several, and returns their results in call order.
func (r *run) runTools(ctx context.Context, calls []model.Part) []model.Part {
	results := make([]model.Part, len(calls))
	if len(calls) == 1 {
		results[0] = r.runTool(ctx, calls[0])
		return results
	}
	if r.env != nil {
		r.env.Parallel(ctx, len(calls), func(ctx context.Context, i int) { results[i] = r.runTool(ctx, calls[i]) })
		return results
	}
	var wg sync.WaitGroup
	for i, c := range calls {
		wg.Go(func() { results[i] = r.runTool(ctx, c) })
	}
	wg.Wait()
	return results
}

func (r *run) runTool(ctx context.Context, c model.Part) model.Part {
	raw := c.Args
	if !json.Valid(raw) {
		// Keep the wire valid: an unparsable argument string travels as a
		// JSON string.
		b, _ := json.Marshal(string(raw))
		raw = b
	}
	call := tool.Call{ID: c.ToolCallID, Name: c.ToolName, Args: raw, SessionID: r.inv.Session.ID}
	t, ok := r.tools[c.ToolName]
	title, kind := c.ToolName, tool.KindOther
	var locs []tool.Location
	if ok {
		title = tool.Title(t, call)
		if k := t.Info().Kind; k != "" {
			kind = k
		}
		locs = tool.Locations(t, call)
	}
	r.sink.Emit(event.ToolCallStart{ToolCallID: c.ToolCallID, ToolName: c.ToolName, Title: title, ToolKind: kind, RawInput: raw, Locations: locs})
	var res tool.Result
	switch {
	case !ok:
		names := make([]string, len(r.specs))
		for i, s := range r.specs {
			names[i] = s.Name
		}
		res = tool.Errorf("unknown tool %q; available tools: %s", c.ToolName, strings.Join(names, ", "))
	default:
		res = r.execute(ctx, t, call)
	}
	r.sink.Emit(event.ToolCallComplete{ToolCallID: c.ToolCallID, ToolName: c.ToolName, ToolInput: raw, ToolResult: res.Content, IsError: res.IsError, AgentName: r.a.cfg.Name,
		Locations: res.Locations, Diffs: res.Diffs, Metadata: res.Metadata})
	return model.Part{Kind: model.PartToolResult, ToolCallID: c.ToolCallID, ToolName: c.ToolName, Text: res.Content, IsError: res.IsError}
}

// execute runs one tool through the hook seams.
func (r *run) execute(ctx context.Context, t tool.Tool, call tool.Call) tool.Result {
	h := r.hooks
	if h == nil {
		return r.call(ctx, t, call)
	}
	info := ToolInfo{Agent: r.a.cfg.Name, SessionID: r.inv.Session.ID, ToolName: call.Name, CallID: call.ID, Input: slices.Clone(call.Args)}
	d := h.PreTool(ctx, info)
	if !d.Allow {
		return tool.Errorf("tool %s denied: %s", call.Name, d.Reason)
	}
	if len(d.Input) > 0 && json.Valid(d.Input) {
		call.Args = slices.Clone(d.Input)
		info.Input = slices.Clone(d.Input)
	}
	res := r.call(ctx, t, call)
	return h.PostTool(ctx, info, res)
}

// call runs a tool: here, or through the run's Env when it has one and the
// tool is not one of the run's own (spawn.Inline: delegations and the
// readers of the run's state run in the run, where Spawn reaches its Env).
func (r *run) call(ctx context.Context, t tool.Tool, call tool.Call) tool.Result {
	if r.env != nil && !spawn.IsInline(t) {
		return r.env.Tool(ctx, r.inv, r.a.cfg.Name, call)
	}
	return tool.Run(ctx, t, call)
}
