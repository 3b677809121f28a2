// Package checkpoint goes back in a session and branches from it
// (docs/checkpoints.md), over a store that keeps file captures
// (session.CaptureStore).
//
// Every message of every session is a checkpoint: before a file tool
// changes a file, the file as it was (or its absence) is captured for the
// message that holds the call, once per file and message (the pool's
// file tools do it). Tools that change files by means the pool cannot
// see (Bash, MCP tools, an external agent's terminals) are wrapped by a
// Watcher, which scans the workspace before and after each call
// (bounded; a bound reached is said in the call's result; what the
// workspace's .gitignore files ignore is skipped) and captures what the
// call changed as it was before; a background shell's changes are
// captured when it is next seen (its read, its end as an external agent
// sees it, or a rewind or fork of its session, which catches up every
// shell of the line first). Rewind takes a session back to just before one of
// its messages: the files that message and every later one changed, in
// the session and in the sessions they spawned, are restored byte for
// byte (mode bits included) through an os.Root of their workspace, a file
// they created is removed; and/or the conversation is cut back to the
// messages before it, the whole conversation first copied into a fork, so
// that the original stays reachable. Undo takes the last rewind back (the
// files as they were just before it, captured by it, and the messages it
// cut, from its fork). Fork copies a session's conversation
// (all of it, or the messages before one) into a new root session that
// goes on independently; the fork's metadata names where it came from
// (MetaFork), which `sessions tree` shows.
//
// Guarantees: Rewind and Fork claim the session (session.Store.Claim),
// so neither runs while a run holds its line; a rewind restores every
// file it can and reports each one it could not; what it restores is
// exactly the captured bytes.
package checkpoint
