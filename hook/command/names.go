// Tools in Claude Code's vocabulary: what hooks (and transcripts) call
// agentpool's tools.

package command

import (
	"encoding/json"
	"strings"
)

// The builtin tools already carry Claude Code's names (Bash, Read, Write,
// Edit, ...) and MCP tools are mcp__<server>__<tool>, as in Claude Code.
// The one delegation tool Claude Code also has is the subagent tool:
// agentpool's task is presented as Claude Code's Task, with Task's input.
const (
	agentpoolTask = "task"
	claudeTask    = "Task"
	// claudeAgent is what later Claude Code versions call the same tool;
	// matchers written for them select task too.
	claudeAgent = "Agent"
)

// taskInput is the input of Claude Code's Task tool.
type taskInput struct {
	Description     string `json:"description"`
	Prompt          string `json:"prompt"`
	SubagentType    string `json:"subagent_type"`
	RunInBackground bool   `json:"run_in_background,omitempty"`
}

// agentpoolTaskInput is the input of agentpool's task tool.
type agentpoolTaskInput struct {
	AgentOrTeam string `json:"agent_or_team"`
	Prompt      string `json:"prompt"`
	Description string `json:"description,omitempty"`
	AsyncMode   bool   `json:"async_mode,omitempty"`
}

// toolView is a tool call as hooks see it.
type toolView struct {
	name    string   // tool_name
	input   any      // tool_input
	aliases []string // other names a matcher may select it by (its agentpool name)
}

// presentTool returns a tool call in Claude Code's vocabulary.
func presentTool(name string, input json.RawMessage) toolView {
	if name != agentpoolTask {
		return toolView{name: name, input: toolInput(input)}
	}
	var a agentpoolTaskInput
	if json.Unmarshal(input, &a) != nil {
		return toolView{name: claudeTask, input: toolInput(input), aliases: []string{agentpoolTask, claudeAgent}}
	}
	return toolView{name: claudeTask, aliases: []string{agentpoolTask, claudeAgent}, input: taskInput{
		Description: a.Description, Prompt: a.Prompt, SubagentType: a.AgentOrTeam, RunInBackground: a.AsyncMode,
	}}
}

// fromClaude turns an updatedInput a hook gave in Claude Code's vocabulary
// back into the input of agentpool's tool.
func fromClaude(name string, updated json.RawMessage) json.RawMessage {
	if name != agentpoolTask || updated == nil {
		return updated
	}
	var in struct {
		taskInput
		AgentOrTeam *string `json:"agent_or_team"`
		AsyncMode   *bool   `json:"async_mode"`
	}
	if json.Unmarshal(updated, &in) != nil {
		return updated
	}
	out := agentpoolTaskInput{AgentOrTeam: in.SubagentType, Prompt: in.Prompt, Description: in.Description, AsyncMode: in.RunInBackground}
	if in.AgentOrTeam != nil && out.AgentOrTeam == "" {
		out.AgentOrTeam = *in.AgentOrTeam // given in agentpool's own words
	}
	if in.AsyncMode != nil && !out.AsyncMode {
		out.AsyncMode = *in.AsyncMode
	}
	b, err := json.Marshal(out)
	if err != nil {
		return updated
	}
	return b
}

func toolInput(raw json.RawMessage) any {
	if len(raw) == 0 {
		return map[string]any{}
	}
	return raw
}

// toolResponse is a tool's result as PostToolUse hooks see it: its JSON
// when the content is JSON, else the text. Task's result also carries
// Claude Code's content blocks (content[0].text is the subagent's answer).
func toolResponse(name, content string) any {
	t := strings.TrimSpace(content)
	isJSON := t != "" && (t[0] == '{' || t[0] == '[') && json.Valid([]byte(t))
	if name == agentpoolTask && isJSON {
		var m map[string]any
		if json.Unmarshal([]byte(t), &m) == nil {
			if out, ok := m["output"].(string); ok {
				m["content"] = []any{map[string]any{"type": "text", "text": out}}
			}
			return m
		}
	}
	if isJSON {
		return json.RawMessage(t)
	}
	return content
}
