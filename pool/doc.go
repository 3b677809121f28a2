// Package pool builds runnable nodes (agents, teams and custom spawn.Nodes)
// that share one spawn runtime and one session store, and runs a node by
// name.
//
// A pool comes from a manifest (New, which is FromManifest then Build) or
// from Go values (Build with a Config: models, tools per agent, workers,
// teams, custom nodes). Build validates a Config as config.Parse validates
// a manifest: an undefined worker or team member, a duplicate name, a
// missing model or a team cycle is an error at construction, with every
// problem reported. Model types are wired in with a Registry value
// (Options.Registry; no package-level registration): test, scripted and
// fallback are built in, and package batteries wires in openai, anthropic,
// the fetch toolset and MCP, so that this package needs no provider SDK or
// HTTP client. Options.Hooks is the *hook.Registry that holds every hook
// point and the agents' tool_approval policies.
//
// A root run creates (or, to resume, reopens) a root session, runs the node,
// records every event of the run in the store in stream order (each event
// in the log of the session that produced it; spawn starts and ends in the
// parent's log), and finalizes the session with its status, usage and cost
// rolled up over the subtree. Events reach the caller in the order they were
// recorded. Run returns only after every goroutine of the run has finished.
//
// A run whose store did not keep all of its writes (a full disk; every
// write of the run is accounted for, session.TrackWrites, those answered
// before their commit included) failed, whatever its node said: its
// result has stop reason error and a *session.NotStoredError that names
// the store and the cause, and keeps the node's output; its session is
// marked failed (session.CloseFailed) once the store takes writes again:
// at once, else before the pool's next run and at Close
// (docs/spec/EVENTS.md §9).
//
// A run whose process died while tool calls of its tree waited for a
// person's answer (an approval request stored in its session's log) goes
// on in a later process: Waiting lists such roots, Continue claims one,
// asks its stored requests again with their ids and runs each waiting
// session on from its open tool calls, up to the root (see Continue and
// docs/approvals.md, Durable).
//
// With Options.Engine a root runs on a durable execution engine instead
// (the CLI's is Temporal's, package durable, which pool does not import):
// the claim, the history, the session hooks and the recorder stay here;
// the engine's workers store the events, which the recorder hands to its
// watchers and the caller without storing them again (Recorder.Relay).
package pool
