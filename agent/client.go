// A client's tools (spawn.Invocation.ClientTools): offered to the model,
// run by the client. A turn that calls one ends the run; a later run
// brings the results (Invocation.ClientResults). Functions of a run, not
// its methods: the run type is over the method ratchet of tests/floors.

package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/model"
	"github.com/agentpool/agentpool/spawn"
)

// lendClientTools adds the invocation's client tools to the run's specs.
// A name one of the run's own tools has is an error: the model could not
// tell which one it calls.
func lendClientTools(r *run) error {
	tools := r.inv.ClientTools
	if len(tools) == 0 {
		return nil
	}
	r.client = make(map[string]bool, len(tools))
	specs := slices.Clip(r.specs)
	for _, t := range tools {
		if _, own := r.tools[t.Name]; own {
			return fmt.Errorf("client tool %q: agent %s has a tool of that name; rename the client's tool", t.Name, r.a.cfg.Name)
		}
		if r.client[t.Name] {
			return fmt.Errorf("client tool %q is given twice", t.Name)
		}
		r.client[t.Name] = true
		if len(t.Parameters) == 0 {
			t.Parameters = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		specs = append(specs, t)
	}
	r.specs = specs
	return nil
}

// splitClient returns the calls of a response that name a client tool,
// and the others. A call that repeats an id is not the client's (admit
// refuses it).
func splitClient(r *run, calls []model.Part) (client, own []model.Part) {
	if len(r.client) == 0 {
		return nil, calls
	}
	for _, c := range calls {
		if r.client[c.ToolName] && c.DuplicateOf == "" {
			client = append(client, c)
		} else {
			own = append(own, c)
		}
	}
	return client, own
}

// endForClient ends the run at a turn that called client tools: the
// turn's own calls run and get their results; the client's are announced
// (tool_call_start) and stay open for the client to run.
func endForClient(ctx context.Context, r *run, msg model.Message, finish string, client, own []model.Part) spawn.Result {
	for _, c := range client {
		r.startCall(c)
	}
	if len(own) > 0 {
		r.append(ctx, model.Message{Role: model.RoleTool, Parts: r.runTools(ctx, own)})
	}
	if err := context.Cause(ctx); err != nil {
		return r.abort(ctx, err)
	}
	if r.storeErr != nil {
		return r.fail(ctx, fmt.Errorf("%w: %w", ErrStore, r.storeErr), event.StopError, "store_error")
	}
	text := msg.Text()
	r.sink.Emit(event.StreamComplete{Message: event.Message{
		Role: "assistant", Content: text, Usage: r.usage, Cost: r.cost, Model: r.a.cfg.Model.ID(), FinishReason: finish,
	}})
	return spawn.Result{Output: text, StopReason: event.StopCompleted, ClientCalls: client}
}

// recordClientResults records the client's results of the open calls of
// the conversation's last model turn (Invocation.ClientResults, checked
// by the caller): each call's tool_call_complete, then one tool message.
func recordClientResults(ctx context.Context, r *run) {
	results := r.inv.ClientResults
	args := map[string]model.Part{}
	msgs := r.snapshot()
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == model.RoleAssistant {
			for _, c := range msgs[i].ToolCalls() {
				args[c.ToolCallID] = c
			}
			break
		}
	}
	parts := make([]model.Part, len(results))
	for i, res := range results {
		var input json.RawMessage
		name := res.ToolName
		if call, ok := args[res.ToolCallID]; ok {
			input, name = callArgs(call), call.ToolName
		}
		r.sink.Emit(event.ToolCallComplete{ToolCallID: res.ToolCallID, ToolName: name, ToolInput: input, ToolResult: res.Text,
			IsError: res.IsError, AgentName: r.a.cfg.Name})
		parts[i] = model.Part{Kind: model.PartToolResult, ToolCallID: res.ToolCallID, ToolName: name, Text: res.Text, IsError: res.IsError}
	}
	r.append(ctx, model.Message{Role: model.RoleTool, Parts: parts})
}
