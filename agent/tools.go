// The agent's tools: collecting them for a run, and running the calls of a turn.

package agent

import (
	"context"
	"encoding/json"
	"fmt"
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

// toolsFor returns the tools of inv's run: the agent's own, the tools of
// its toolsets and of the toolsets inv was lent (Invocation.Toolsets),
// each name once (the first wins).
func (a *Agent) toolsFor(ctx context.Context, inv *spawn.Invocation, sink event.Sink) (map[string]tool.Tool, []model.ToolSpec) {
	var extra []tool.Tool
	toolsets := append(a.cfg.Toolsets[:len(a.cfg.Toolsets):len(a.cfg.Toolsets)], inv.Toolsets...)
	var (
		listed  []ToolsetList // the agent's toolsets, listed by a toolsetEnv
		listErr error
	)
	if inv.Env != nil && len(a.cfg.Toolsets) > 0 {
		if te, ok := inv.Env.(toolsetEnv); ok {
			listed, listErr = te.ListToolsets(ctx, inv, a.cfg.Name)
		}
	}
	for i, ts := range toolsets {
		if inv.Env != nil {
			// Asking a toolset is I/O, which a durable engine's
			// deterministic run cannot do: its Env lists the agent's
			// own toolsets where they run (a worker), and runs their
			// calls there too; lent toolsets (a client's) are not
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
// several, and returns their results in call order. The calls admit
// refuses get their error results without running.
func (r *run) runTools(ctx context.Context, calls []model.Part) []model.Part {
	results := make([]model.Part, len(calls))
	admitted := r.admit(calls, results)
	if admitted == nil {
		if len(calls) == 1 {
			results[0] = r.runTool(ctx, calls[0])
			return results
		}
		admitted = make([]int, len(calls))
		for i := range admitted {
			admitted[i] = i
		}
	}
	switch {
	case len(admitted) == 0:
		return results
	case len(admitted) == 1:
		i := admitted[0]
		results[i] = r.runTool(ctx, calls[i])
		return results
	case r.env != nil:
		r.env.Parallel(ctx, len(admitted), func(ctx context.Context, k int) {
			i := admitted[k]
			results[i] = r.runTool(ctx, calls[i])
		})
		return results
	}
	var wg sync.WaitGroup
	for _, i := range admitted {
		wg.Go(func() { results[i] = r.runTool(ctx, calls[i]) })
	}
	wg.Wait()
	return results
}

// admit decides which calls of a response run: not one that repeats an
// id of the response (model.Part.DuplicateOf), nor those past
// MaxToolCallsPerTurn. Each refused call gets its error result in
// results, and its tool_call_start and failed tool_call_complete, so that
// both the model and the user read why it did not run. admit returns the
// indexes of the calls to run, or nil when all of them run.
func (r *run) admit(calls, results []model.Part) []int {
	limit := r.a.cfg.MaxToolCallsPerTurn
	if len(calls) <= limit && !slices.ContainsFunc(calls, func(c model.Part) bool { return c.DuplicateOf != "" }) {
		return nil
	}
	admitted := make([]int, 0, min(len(calls), limit))
	for i, c := range calls {
		switch {
		case c.DuplicateOf != "":
			results[i] = r.refuse(c, fmt.Sprintf("duplicate tool call id %q in one response: this call was not run (only the first call with that id runs; this one was given the id %s); call the tool again if it is still needed",
				c.DuplicateOf, c.ToolCallID))
		case len(admitted) == limit:
			results[i] = r.refuse(c, fmt.Sprintf("tool call limit per turn (%d) reached: this call was not run (call %d of %d in one response; max_tool_calls_per_turn); call the tool again in a later response if it is still needed",
				limit, i+1, len(calls)))
		default:
			admitted = append(admitted, i)
		}
	}
	return admitted
}

// runTool runs one call, announced by tool_call_start and ended by
// tool_call_complete.
func (r *run) runTool(ctx context.Context, c model.Part) model.Part {
	call, t, ok := r.startCall(c)
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
	return r.completeCall(c, call.Args, res)
}

// refuse ends a call that is not run with the error reason, as runTool
// ends one that ran.
func (r *run) refuse(c model.Part, reason string) model.Part {
	call, _, _ := r.startCall(c)
	return r.completeCall(c, call.Args, tool.Result{Content: reason, IsError: true})
}

// startCall emits the tool_call_start of c and returns its tool.Call and
// its tool (ok false when the run has no tool of that name).
func (r *run) startCall(c model.Part) (call tool.Call, t tool.Tool, ok bool) {
	raw := callArgs(c)
	call = tool.Call{ID: c.ToolCallID, Name: c.ToolName, Args: raw, SessionID: r.inv.Session.ID, MessageID: r.callMsgID}
	t, ok = r.tools[c.ToolName]
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
	return call, t, ok
}

// callArgs are the arguments of c as valid JSON: an unparsable argument
// string travels as a JSON string, so that the wire stays valid.
func callArgs(c model.Part) json.RawMessage {
	if json.Valid(c.Args) {
		return c.Args
	}
	b, _ := json.Marshal(string(c.Args))
	return b
}

// completeCall emits the tool_call_complete of c and returns its result
// part.
func (r *run) completeCall(c model.Part, raw json.RawMessage, res tool.Result) model.Part {
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
	if !d.Allows() {
		reason := d.Reason
		if d.Action != ToolDeny {
			// An ask no one resolved, or an action this run does not know.
			reason = fmt.Sprintf("tools/pre-execute answered %q, which is not allow or deny", d.Action)
			if d.Reason != "" {
				reason += " (" + d.Reason + ")"
			}
		}
		return tool.Errorf("tool %s denied: %s", call.Name, reason)
	}
	if len(d.UpdatedInput) > 0 && json.Valid(d.UpdatedInput) {
		call.Args = slices.Clone(d.UpdatedInput)
		info.Input = slices.Clone(d.UpdatedInput)
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
