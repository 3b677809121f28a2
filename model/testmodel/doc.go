// Package testmodel is the scripted, offline model that is the default of
// agentpool: no network, no API key, deterministic output.
//
// Two forms exist. The AgentPool test model (Config with CallAll or
// CallTools, ToolArgs, Seed and Text) behaves like AgentPool's `type: test`
// (pydantic-ai's TestModel): the first request after a user prompt is
// answered with calls to the tools (every tool offered when CallAll, the
// manifest's default, else the listed ones), with the ToolArgs of a tool or
// arguments made from its schema (Generate); every later request is
// answered with Text, or, when Text is empty, with the JSON value a
// structured output asks for (made from its schema), or a JSON object of
// the tool results ({"tool": result}), or a reply quoting the prompt when
// no tool was called. The zero Config calls no tool. The scripted model
// (Config with Turns) plays its turns in order: turn i answers the i-th
// model request after the last user prompt; past the end it answers with
// the last turn's text and no tool calls.
//
// A compaction request (model.Request.Summarize) is answered by both forms
// with a fixed summary that names the messages it replaces, the last
// prompt among them and the model turns since that prompt; a later
// request whose conversation starts with that summary goes on at the turn
// it had reached.
//
// Both decide from the request alone (never from state on the Model), so one
// instance serves any number of concurrent sessions. Text is streamed in
// several deltas, like a real model; an optional per-chunk delay makes runs
// slow enough for demos and cancellation tests, and honours the context.
package testmodel
