// Package tracing makes OpenTelemetry traces and metrics of a pool's runs,
// following the GenAI semantic conventions: an `invoke_agent {agent}` span
// per session (`invoke_workflow {team}` for a team), a `chat {model}` span
// per model call and an `execute_tool {tool}` span per tool call, nested as
// the delegation tree is (a child session under the execute_tool span of
// the call that spawned it, a team member under its team's span).
//
// Where the spans are made, and why there: an Observer decorates the three
// things a run is made of, and nothing else.
//
//   - Nodes (spawn.Node): the session span wraps Node.Run. Run is called
//     by spawn's one session lifecycle (runSession) for roots and children
//     alike, with the context of the caller: for a child, the context of
//     the tool call that spawned it (task, ask_<worker>) or of the team
//     that runs it. So a span made there parents on the execute_tool or
//     team span through the context, with no lookup table. The
//     hook points (spawn.Lifecycle, session start and end) were the alternative, but
//     they cannot change the context the node runs with, so they could
//     only nest children through a table keyed by session id.
//   - Models (model.Model): the chat span covers one Stream, from its first
//     chunk to its last, and reads the usage and finish reason from the
//     chunks the agent reads anyway.
//   - Tools (tool.Tool, tool.Toolset): the execute_tool span covers one
//     Call, and its context is the one the tool runs with, so a delegation
//     tool's child session nests under it. The agent.Hooks tool seams see
//     the call but cannot hand the tool a context.
//
// The pool installs the decorators only when it is given a tracer or meter
// provider (pool.Options): with neither, nothing is wrapped and a run costs
// what it did before this package existed. Hooks and events are unchanged:
// tracing observes the same calls the event stream reports, it is not a
// second source of truth (the session's stored record stays the account
// of usage and cost; the spans carry each session's own figures).
//
// Message contents (prompts, answers, tool arguments and results) are put
// on spans only when OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT is
// true, the conventions' opt-in; API keys and headers never are.
//
// This package depends on the OpenTelemetry API only. Export says what the
// OTEL_* environment variables and a manifest's `observability:` block ask
// to export; making the SDK's providers and exporters that do it is
// tracing/otelwire's (Setup), which only agentpool-full imports, so the
// light binary, agentpool-light, can apply the same rule without the SDK. Reading
// a caller's `traceparent` is internal/otelprop's (FromHeader,
// FromTraceparent, Propagator), which the servers and a Temporal worker
// use to continue a run's trace (WithRemoteParent).
//
// A session run as a Temporal workflow (package durable) is traced by the
// Temporal SDK's interceptor instead of Node: workflow code replays, so it
// runs under WithoutSpans (the decorators stand aside) and SessionSpan
// makes the interceptor's workflow span the session's, once, at its end.
// Model and tool calls run in activities, which do not replay, and are
// traced by the decorators as here.
package tracing
