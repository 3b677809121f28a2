// Package todo is the `plan` toolset: TodoWrite, Claude Code's todo list
// tool, kept per session.
//
// Each call replaces the session's list and announces it as a plan_update
// event in the session's stream, so every front end shows it (ACP plan
// updates, OpenCode todos, AG-UI state, the terminal view) and the event
// log keeps it: a session's current list is its last plan_update. The
// toolset also keeps the newest lists in memory (List), bounded to the
// most recently updated sessions.
package todo
