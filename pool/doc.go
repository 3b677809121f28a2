// Package pool loads a manifest into runnable nodes (agents and teams) that
// share one spawn runtime and one session store, and runs a node by name.
//
// A root run creates (or, to resume, reopens) a root session, runs the node,
// records every event of the run in the store in stream order (each event
// in the log of the session that produced it; spawn starts and ends in the
// parent's log), and finalizes the session with its status, usage and cost
// rolled up over the subtree. Events reach the caller in the order they were
// recorded. Run returns only after every goroutine of the run has finished.
package pool
