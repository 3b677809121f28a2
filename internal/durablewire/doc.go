// Package durablewire is the contract between the agent loop (packages
// spawn and agent) and a durable execution engine (package durable) that
// runs that loop as a deterministic workflow: the seams an engine's
// spawn.Env implements besides spawn.Env itself, and the worker side of
// the agents' hook calls.
//
// They are here, not in spawn and agent, because only a durable engine
// implements or calls them: a program that embeds the pool never does,
// and their shape changes with the engine. spawn and agent find the seams
// on an Env by their method sets (unexported interfaces with the methods
// of SpawnBudget, HookEnv and ToolsetEnv); this package names them, so
// that the engine's types can be checked against them at compile time,
// and its tests check that a run under an Env that implements them goes
// through each.
package durablewire
