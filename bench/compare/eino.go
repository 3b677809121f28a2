package compare

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/cloudwego/eino/adk"
	"github.com/cloudwego/eino/components/model"
	"github.com/cloudwego/eino/components/tool"
	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/schema"
)

// fakeModel is a scripted eino chat model: it answers from the messages it
// is given, with no state, so one instance serves every run.
type fakeModel struct {
	// callTool, when set, is the tool the model calls first (with args);
	// once a tool result is in the conversation it answers final.
	callTool string
	args     string
	final    string
}

var _ model.ToolCallingChatModel = (*fakeModel)(nil)

func (m *fakeModel) reply(input []*schema.Message) *schema.Message {
	if m.callTool != "" && (len(input) == 0 || input[len(input)-1].Role != schema.Tool) {
		return schema.AssistantMessage("", []schema.ToolCall{{
			ID: "call_1", Type: "function",
			Function: schema.FunctionCall{Name: m.callTool, Arguments: m.args},
		}})
	}
	return schema.AssistantMessage(m.final, nil)
}

// Generate implements model.BaseChatModel.
func (m *fakeModel) Generate(_ context.Context, input []*schema.Message, _ ...model.Option) (*schema.Message, error) {
	return m.reply(input), nil
}

// Stream implements model.BaseChatModel: the whole reply as one chunk.
func (m *fakeModel) Stream(_ context.Context, input []*schema.Message, _ ...model.Option) (*schema.StreamReader[*schema.Message], error) {
	return schema.StreamReaderFromArray([]*schema.Message{m.reply(input)}), nil
}

// WithTools implements model.ToolCallingChatModel.
func (m *fakeModel) WithTools([]*schema.ToolInfo) (model.ToolCallingChatModel, error) { return m, nil }

// Eino is the delegated call on eino's ADK: parent agent -> agent tool
// "worker" (EmitInternalEvents) -> worker agent answers "done" -> parent
// answers "finished".
type Eino struct {
	runner *adk.Runner
	// Events counts the events consumed so far.
	Events int
}

// NewEino builds the agents and the runner once.
func NewEino(ctx context.Context, streaming bool) (*Eino, error) {
	worker, err := adk.NewChatModelAgent(ctx, &adk.ChatModelAgentConfig{
		Name: "worker", Description: "Does the work.",
		Model: &fakeModel{final: "done"},
	})
	if err != nil {
		return nil, err
	}
	parent, err := adk.NewChatModelAgent(ctx, &adk.ChatModelAgentConfig{
		Name: "parent", Description: "Delegates one piece of work.",
		Instruction: "You delegate the work to the worker and report.",
		Model:       &fakeModel{callTool: "worker", args: `{"request":"Do the work."}`, final: "finished"},
		ToolsConfig: adk.ToolsConfig{
			ToolsNodeConfig:    compose.ToolsNodeConfig{Tools: []tool.BaseTool{adk.NewAgentTool(ctx, worker)}},
			EmitInternalEvents: true,
		},
	})
	if err != nil {
		return nil, err
	}
	return &Eino{runner: adk.NewRunner(ctx, adk.RunnerConfig{Agent: parent, EnableStreaming: streaming})}, nil
}

// Run runs one delegated call and consumes every event. It returns the
// parent's final answer.
func (e *Eino) Run(ctx context.Context) (string, error) {
	it := e.runner.Query(ctx, "Delegate the work.")
	final := ""
	for {
		ev, ok := it.Next()
		if !ok {
			break
		}
		e.Events++
		if ev.Err != nil {
			return "", ev.Err
		}
		if ev.Output == nil || ev.Output.MessageOutput == nil {
			continue
		}
		mv := ev.Output.MessageOutput
		content := ""
		if mv.IsStreaming && mv.MessageStream != nil {
			for {
				chunk, err := mv.MessageStream.Recv()
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					mv.MessageStream.Close()
					return "", err
				}
				content += chunk.Content
			}
			mv.MessageStream.Close()
		} else if mv.Message != nil {
			content = mv.Message.Content
		}
		if ev.AgentName == "parent" && mv.Role == schema.Assistant && content != "" {
			final = content
		}
	}
	if final != "finished" {
		return final, fmt.Errorf("eino: parent answered %q", final)
	}
	return final, nil
}
