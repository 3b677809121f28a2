package spawn

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/internal/jsonstr"
	"github.com/agentpool/agentpool/model"
	"github.com/agentpool/agentpool/tool"
)

// The subagent toolset (toolset `type: subagent`): task,
// list_available_nodes, task_status, task_output, task_stop and
// send_message, and AgentPool's
// delegate_to and ask_agent (tools_agentpool.go). Each is a thin caller of
// Spawn or a reader of the run's task table.

type taskArgs struct {
	AgentOrTeam string `json:"agent_or_team" jsonschema:"description=Name of the agent or team to delegate to (see list_available_nodes)"`
	Prompt      string `json:"prompt" jsonschema:"description=The complete task for the delegate"`
	Description string `json:"description,omitempty" jsonschema:"description=A short (3-5 word) description of the task"`
	AsyncMode   bool   `json:"async_mode,omitempty" jsonschema:"description=Run in the background and return a task id at once; the result arrives later as a message"`
}

type listArgs struct {
	NodeType string `json:"node_type,omitempty" jsonschema:"enum=all,enum=agent,enum=team,description=Which nodes to list (default all)"`
	OnlyIdle bool   `json:"only_idle,omitempty" jsonschema:"description=Only nodes with no running session"`
}

type taskIDArgs struct {
	TaskID string `json:"task_id" jsonschema:"description=The task id returned by an async task call"`
}

// SubagentTools returns the tools of the subagent toolset: task,
// list_available_nodes, task_status, task_output, task_stop,
// send_message (tools_control.go), delegate_to and ask_agent.
func SubagentTools() []tool.Tool {
	return []tool.Tool{taskTool, listNodesTool, taskStatusTool, taskOutputTool, taskStopTool, sendMessageTool, delegateTool, askAgentTool}
}

var taskTool = titled{tool.New("task",
	"Delegate a task to another agent or team. It runs in its own child session. With async_mode it runs in the background and its result is delivered to you later as a message.",
	func(ctx context.Context, call tool.Call, a taskArgs) (tool.Result, error) {
		inv := InvocationFrom(ctx)
		if inv == nil {
			return tool.Errorf("task: no session in context"), nil
		}
		if strings.TrimSpace(a.AgentOrTeam) == "" {
			return tool.Errorf("task: agent_or_team is required; available: %s", strings.Join(inv.Runtime.NodeNames(), ", ")), nil
		}
		node, ok := inv.Runtime.Lookup(a.AgentOrTeam)
		if !ok {
			return tool.Errorf("task: unknown agent or team %q; available: %s", a.AgentOrTeam, strings.Join(inv.Runtime.NodeNames(), ", ")), nil
		}
		req := Request{
			Node: node, Prompt: a.Prompt, Description: a.Description, Mechanism: event.MechanismTask,
			Async: a.AsyncMode, ToolCallID: call.ID,
		}
		child, err := Spawn(ctx, inv, req)
		if err != nil {
			ReportRefused(inv, req, err)
			return tool.Errorf("task: %v%s", err, limitHint(err)), nil
		}
		if a.AsyncMode {
			return jsonResult(map[string]string{"task_id": child.TaskID, "session_id": child.SessionID}, false), nil
		}
		return childResult(child), nil
	}), func(call tool.Call) string {
	var a taskArgs
	_ = json.Unmarshal(call.Args, &a)
	if a.Description != "" {
		return a.Description
	}
	if a.AgentOrTeam != "" {
		return "Delegate to " + a.AgentOrTeam
	}
	return ""
}}

var listNodesTool = inline{tool.WithKind(tool.New("list_available_nodes",
	"List the agents and teams you can delegate to (with task, delegate_to or ask_agent).",
	func(ctx context.Context, _ tool.Call, a listArgs) (tool.Result, error) {
		inv := InvocationFrom(ctx)
		if inv == nil {
			return tool.Errorf("list_available_nodes: no session in context"), nil
		}
		out := []NodeInfo{}
		for _, n := range inv.Runtime.Nodes() {
			if a.NodeType != "" && a.NodeType != "all" && n.Type != a.NodeType {
				continue
			}
			if a.OnlyIdle && n.Running > 0 {
				continue
			}
			out = append(out, n)
		}
		return jsonResult(out, false), nil
	}), tool.KindSearch)}

var taskStatusTool = inline{tool.WithKind(tool.New("task_status",
	"Check the status of a background task: running, completed, error or aborted.",
	func(ctx context.Context, _ tool.Call, a taskIDArgs) (tool.Result, error) {
		inv := InvocationFrom(ctx)
		if inv == nil {
			return tool.Errorf("task_status: no session in context"), nil
		}
		t, ok := inv.Task(a.TaskID)
		if !ok {
			return tool.Errorf("task_status: unknown task %q", a.TaskID), nil
		}
		return jsonResult(map[string]string{"task_id": t.ID, "session_id": t.SessionID, "status": t.Status()}, false), nil
	}), tool.KindRead)}

var taskOutputTool = inline{tool.WithKind(tool.New("task_output",
	"Read the output of a background task. Without block it waits for nothing (a running task reports that it is still running); with block: true it waits for the task to end, at most timeout_ms.",
	func(ctx context.Context, _ tool.Call, a outputArgs) (tool.Result, error) {
		inv := InvocationFrom(ctx)
		if inv == nil {
			return tool.Errorf("task_output: no session in context"), nil
		}
		wait, err := a.outputWait()
		if err != nil {
			return tool.Errorf("task_output: %v", err), nil
		}
		t, ok := inv.Task(a.TaskID)
		if !ok {
			return tool.Errorf("task_output: unknown task %q", a.TaskID), nil
		}
		if wait > 0 && !waitTask(ctx, t, wait) {
			if ctx.Err() != nil {
				return tool.Errorf("task_output: %v", context.Cause(ctx)), nil
			}
			return jsonResult(map[string]string{"task_id": t.ID, "session_id": t.SessionID, "status": TaskRunning,
				"waited": fmt.Sprintf("%dms; it still runs", wait.Milliseconds())}, false), nil
		}
		res, done := t.Result()
		if !done {
			return jsonResult(map[string]string{"task_id": t.ID, "status": TaskRunning}, false), nil
		}
		out := map[string]string{"task_id": t.ID, "session_id": t.SessionID, "status": string(res.StopReason), "output": res.Output}
		if res.Err != nil {
			out["error"] = res.Err.Error()
		}
		return jsonResult(out, res.StopReason != event.StopCompleted), nil
	}), tool.KindRead)}

// workerArgs are the arguments of an ask_<name> tool.
type workerArgs struct {
	Prompt string `json:"prompt" jsonschema:"description=What to ask the worker"`
}

// WorkerOptions configure one worker tool.
type WorkerOptions struct {
	// PassMessageHistory gives the worker the caller's conversation so far.
	PassMessageHistory bool
	// ResetHistoryOnRun starts every call afresh; when false the worker
	// keeps its conversation across calls within the caller's session.
	ResetHistoryOnRun bool
	// History returns the caller's conversation (used with PassMessageHistory).
	History func(ctx context.Context) []model.Message
}

// WorkerTool returns the tool ask_<name> that spawns the named node as a
// worker in a child session per call.
func WorkerTool(name, description string, opts WorkerOptions) tool.Tool {
	desc := fmt.Sprintf("Ask the %s worker. It runs in its own child session and returns its answer.", name)
	if description != "" {
		desc += " " + description
	}
	description, title := "ask "+name, "Ask "+name // made once, not per call
	return titled{tool.New("ask_"+name, desc, func(ctx context.Context, call tool.Call, a workerArgs) (tool.Result, error) {
		inv := InvocationFrom(ctx)
		if inv == nil {
			return tool.Errorf("ask_%s: no session in context", name), nil
		}
		node, ok := inv.Runtime.Lookup(name)
		if !ok {
			return tool.Errorf("ask_%s: unknown worker %q; available: %s", name, name, strings.Join(inv.Runtime.NodeNames(), ", ")), nil
		}
		var history []model.Message
		if opts.PassMessageHistory && opts.History != nil {
			history = append(history, opts.History(ctx)...)
		}
		if !opts.ResetHistoryOnRun {
			inv.h.mu.Lock()
			history = append(history, inv.workerHistory[name]...)
			inv.h.mu.Unlock()
		}
		req := Request{
			Node: node, Prompt: a.Prompt, Description: description, Mechanism: event.MechanismWorker,
			ToolCallID: call.ID, History: history,
		}
		child, err := Spawn(ctx, inv, req)
		if err != nil {
			ReportRefused(inv, req, err)
			return tool.Errorf("ask_%s: %v%s", name, err, limitHint(err)), nil
		}
		if !opts.ResetHistoryOnRun {
			inv.h.mu.Lock()
			if inv.workerHistory == nil {
				inv.workerHistory = map[string][]model.Message{}
			}
			inv.workerHistory[name] = append(inv.workerHistory[name], child.Result.Messages...)
			inv.h.mu.Unlock()
		}
		return childResult(child), nil
	}), func(tool.Call) string { return title }}
}

// limitHint tells the model what to do when a delegation limit refused a
// spawn: retrying the same delegation cannot succeed.
func limitHint(err error) string {
	switch {
	case errors.Is(err, ErrDepthLimit):
		return ". Delegation is not possible at this depth: do this part yourself."
	case errors.Is(err, ErrSpawnBudget):
		return ". No more delegations are possible in this run: do the remaining work yourself and answer."
	}
	return ""
}

func childResult(c Child) tool.Result {
	r := c.Result
	if r.StopReason == event.StopCompleted || r.StopReason == event.StopMaxTokens {
		// What json.Marshal of the map below would write (sorted keys),
		// built in one buffer: this is every delegated call's result.
		b := make([]byte, 0, len(`{"output":,"session_id":}`)+len(r.Output)+len(c.SessionID)+8)
		b = append(b, `{"output":`...)
		b = jsonstr.Append(b, r.Output)
		b = append(b, `,"session_id":`...)
		b = jsonstr.Append(b, c.SessionID)
		b = append(b, '}')
		return tool.Result{Content: string(b)}
	}
	out := map[string]string{"session_id": c.SessionID, "stop_reason": string(r.StopReason), "output": r.Output}
	if r.Err != nil {
		out["error"] = r.Err.Error()
	}
	if ce, ok := errors.AsType[*CancelledError](r.Err); ok {
		// The user stopped this delegation on purpose: the model should
		// go on without it rather than try it again.
		out["cancelled_by"] = ce.By
	}
	return jsonResult(out, true)
}

func jsonResult(v any, isError bool) tool.Result {
	b, err := json.Marshal(v)
	if err != nil {
		return tool.Errorf("encode result: %v", err)
	}
	return tool.Result{Content: string(b), IsError: isError}
}

// titled gives a tool a title function.
type titled struct {
	tool.Tool
	title func(tool.Call) string
}

func (t titled) Title(c tool.Call) string { return t.title(c) }

// RunsInline implements Inline: every titled tool is a delegation.
func (titled) RunsInline() bool { return true }

// inline marks a tool of the run's own state (task table, node list) as
// Inline.
type inline struct{ tool.Tool }

func (inline) RunsInline() bool { return true }
