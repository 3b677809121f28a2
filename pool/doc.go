// Package pool builds runnable nodes (agents, teams and custom spawn.Nodes)
// that share one spawn runtime and one session store, and runs a node by
// name.
//
// A pool comes from a manifest (New, which is FromManifest then Build) or
// from Go values (Build with a Config: models, tools per agent, workers,
// teams, custom nodes). Build validates a Config as config.Parse validates
// a manifest: an undefined worker or team member, a duplicate name, a
// missing model or a team cycle is an error at construction, with every
// problem reported. Model types are registered (RegisterModel), not fixed:
// openai, anthropic, test and scripted are built in. Options.Hooks takes
// one value (a *hook.Registry) that may implement agent.Hooks,
// spawn.Lifecycle, SessionHooks and ApprovalPolicies.
//
// A root run creates (or, to resume, reopens) a root session, runs the node,
// records every event of the run in the store in stream order (each event
// in the log of the session that produced it; spawn starts and ends in the
// parent's log), and finalizes the session with its status, usage and cost
// rolled up over the subtree. Events reach the caller in the order they were
// recorded. Run returns only after every goroutine of the run has finished.
//
// With Options.Engine a root runs on a durable execution engine instead
// (the CLI's is Temporal's, package durable, which pool does not import):
// the claim, the history, the session hooks and the recorder stay here;
// the engine's workers store the events, which the recorder hands to its
// watchers and the caller without storing them again (Recorder.Relay).
package pool
