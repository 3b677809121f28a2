// A command the user runs in a session (OpenCode's shell, the TUI's !cmd,
// pool.RunRequest.Shell, which the pool sets as spawn.Invocation.Shell):
// the run calls the agent's Bash tool once, as a model's call would be
// run, without a model turn.

package agent

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/id"
	"github.com/agentpool/agentpool/model"
	"github.com/agentpool/agentpool/spawn"
)

// ShellTool is the tool a user's command runs through (tool/shell.Bash).
const ShellTool = "Bash"

// shellOnly records the command as the user's message and an assistant
// message that calls Bash with it, runs the call as a model's call is run
// (PreToolUse hooks, approval rules, the tool's confinement), records its
// result, and answers with the tool's output. The model sees all three in
// its next turn's history. A command that fails or is denied is still a
// completed run: its result says why, as the model would read it.
func (r *run) shellOnly(ctx context.Context, command string) spawn.Result {
	if _, ok := r.tools[ShellTool]; !ok {
		return r.fail(ctx, fmt.Errorf("agent %s has no %s tool: a shell command runs through it", r.a.cfg.Name, ShellTool), event.StopError, "shell_error")
	}
	args, err := json.Marshal(map[string]string{"command": command})
	if err != nil {
		return r.fail(ctx, err, event.StopError, "shell_error")
	}
	r.append(ctx, model.Message{Role: model.RoleUser, Synthetic: true, Parts: []model.Part{{Kind: model.PartText, Text: "The user ran this command in the shell: " + command}}})
	call := model.Part{Kind: model.PartToolCall, ToolCallID: id.Ascending("call"), ToolName: ShellTool, Args: args}
	r.lastID = ""
	r.append(ctx, model.Message{Role: model.RoleAssistant, Parts: []model.Part{call}})
	r.callMsgID = r.lastID
	results := r.runTools(ctx, []model.Part{call})
	r.append(ctx, model.Message{Role: model.RoleTool, Parts: results})
	if r.storeErr != nil {
		return r.fail(ctx, fmt.Errorf("%w: %w", ErrStore, r.storeErr), event.StopError, "store_error")
	}
	if err := context.Cause(ctx); err != nil {
		return r.abort(ctx, err)
	}
	out := results[0].Text
	r.sink.Emit(event.StreamComplete{Message: event.Message{Role: "assistant", Content: out, Model: r.model.ID(), FinishReason: "stop"}})
	return spawn.Result{Output: out, StopReason: event.StopCompleted}
}
