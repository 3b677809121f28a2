package agent

import (
	"context"
	"encoding/json"

	"github.com/agentpool/agentpool/model"
	"github.com/agentpool/agentpool/tool"
)

// Hooks are the interception seams of the run loop (docs/spec/HOOKS.md §2). The
// hook package implements them; every payload handed to a hook is a copy.
type Hooks interface {
	// PromptSubmit may block the prompt or add context.
	PromptSubmit(ctx context.Context, p PromptInfo) PromptDecision
	// ModelRequest may change the request about to be sent.
	ModelRequest(ctx context.Context, agent, sessionID string, req *model.Request) *model.Request
	// PreTool may deny a tool call (including after asking for approval).
	PreTool(ctx context.Context, t ToolInfo) ToolDecision
	// PostTool sees the result and may replace it (feedback for the model).
	PostTool(ctx context.Context, t ToolInfo, res tool.Result) tool.Result
	// TurnStop may make the agent continue with a reason.
	TurnStop(ctx context.Context, s TurnStopInfo) StopDecision
}

// PromptInfo is the payload of agent/prompt-submit.
type PromptInfo struct {
	Agent     string
	SessionID string
	Content   string
}

// PromptDecision answers agent/prompt-submit.
type PromptDecision struct {
	Block   bool
	Reason  string
	Context string // extra context for the model
}

// ToolInfo is the payload of tools/pre-execute and tools/post-execute.
type ToolInfo struct {
	Agent     string
	SessionID string
	ToolName  string
	CallID    string
	Input     json.RawMessage // a frozen copy: changing it changes nothing that runs
}

// ToolDecision answers tools/pre-execute.
type ToolDecision struct {
	Allow  bool
	Reason string
	// Input, when set (and valid JSON), replaces the call's arguments: the
	// tool runs with it and tools/post-execute sees it.
	Input json.RawMessage
}

// TurnStopInfo is the payload of agent/turn-stop.
type TurnStopInfo struct {
	Agent        string
	SessionID    string
	FinalMessage string
}

// StopDecision answers agent/turn-stop.
type StopDecision struct {
	Continue bool
	Reason   string
}
