// Package testmodel is the scripted, offline model that is the default of
// agentpool: no network, no API key, deterministic output.
//
// Two forms exist. The AgentPool test model (Config with CallTools, ToolArgs
// and Text) answers the first request after a user prompt with calls to the
// listed tools and every later request with the text. The scripted model
// (Config with Turns) plays its turns in order: turn i answers the i-th
// model request after the last user prompt; past the end it answers with
// the last turn's text and no tool calls.
//
// Both decide from the request alone (never from state on the Model), so one
// instance serves any number of concurrent sessions. Text is streamed in
// several deltas, like a real model; an optional per-chunk delay makes runs
// slow enough for demos and cancellation tests, and honours the context.
package testmodel
