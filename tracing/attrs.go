package tracing

import "go.opentelemetry.io/otel/attribute"

// The attribute keys of the GenAI semantic conventions this package sets,
// and agentpool's own. They are spelled out here rather than taken from a
// semconv package: the GenAI conventions are still in development and the
// generated packages rename them between versions.
const (
	keyOperation      = attribute.Key("gen_ai.operation.name")
	keyProvider       = attribute.Key("gen_ai.provider.name")
	keyAgentName      = attribute.Key("gen_ai.agent.name")
	keyAgentID        = attribute.Key("gen_ai.agent.id")
	keyAgentDesc      = attribute.Key("gen_ai.agent.description")
	keyConversationID = attribute.Key("gen_ai.conversation.id")
	keyRequestModel   = attribute.Key("gen_ai.request.model")
	keyFinishReasons  = attribute.Key("gen_ai.response.finish_reasons")
	keyInputTokens    = attribute.Key("gen_ai.usage.input_tokens")
	keyOutputTokens   = attribute.Key("gen_ai.usage.output_tokens")
	keyTokenType      = attribute.Key("gen_ai.token.type")
	keyToolName       = attribute.Key("gen_ai.tool.name")
	keyToolCallID     = attribute.Key("gen_ai.tool.call.id")
	keyToolType       = attribute.Key("gen_ai.tool.type")
	keyToolArgs       = attribute.Key("gen_ai.tool.call.arguments")
	keyToolResult     = attribute.Key("gen_ai.tool.call.result")
	keyInputMessages  = attribute.Key("gen_ai.input.messages")
	keyOutputMessages = attribute.Key("gen_ai.output.messages")
	keySystem         = attribute.Key("gen_ai.system_instructions")
	keyErrorType      = attribute.Key("error.type")

	keyMechanism  = attribute.Key("agentpool.spawn.mechanism")
	keyDepth      = attribute.Key("agentpool.depth")
	keyStopReason = attribute.Key("agentpool.stop_reason")
	keyCost       = attribute.Key("agentpool.cost")
	keyParentID   = attribute.Key("agentpool.parent_session.id")
)

// Operation names (gen_ai.operation.name).
const (
	opInvokeAgent    = "invoke_agent"
	opInvokeWorkflow = "invoke_workflow"
	opChat           = "chat"
	opExecuteTool    = "execute_tool"
)
