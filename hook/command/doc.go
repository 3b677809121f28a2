// Package command runs command hooks written for Claude Code or Codex (the
// "hooks" object of a settings.json or a hooks.json) at the hook points of
// a hook.Registry: docs/spec/HOOKS.md §4.
//
// Load(m) builds the registry of a manifest: the agents' tool_approval
// policies and the command hooks of the files listed in hooks.settings
// (one path or a list, relative to the manifest's directory, merged in
// order). Pass it as pool.Options{Hooks: reg}.
//
// Events and where they run:
//
//	SessionStart      session/start; stdout (plain) or additionalContext is injected into the session
//	UserPromptSubmit  agent/prompt-submit; a block blocks the prompt; stdout / additionalContext is added
//	PreToolUse        tools/pre-execute; deny (exit 2, permissionDecision deny, decision block) denies the call
//	                  and the reason goes to the model; ask goes to approval/request; updatedInput replaces the input
//	PostToolUse       tools/post-execute; a block adds the reason to the result the model sees
//	Stop              agent/turn-stop of a root session; a block makes the agent continue with the reason
//	SubagentStart     subagent/start; additionalContext is injected into the child before its first request
//	SubagentStop      agent/turn-stop of a child session; a block makes the child continue with the reason
//	SessionEnd        session/end
//
// Each hook gets one JSON object on stdin (with a trailing newline):
// session_id (the root session), transcript_path (always "": sessions live
// in the store), cwd, permission_mode, hook_event_name, inside a subagent
// agent_id and agent_type, and the event's own fields. Matchers are
// regular expressions that must match the whole tool name (or agent type,
// SessionStart source, SessionEnd reason); empty or "*" matches all.
//
// Guarantees:
//
//   - A hook runs as "/bin/sh -c COMMAND" in the project directory (the
//     manifest's directory), with CLAUDE_PROJECT_DIR set and
//     ${CLAUDE_PROJECT_DIR} substituted, in its own process group. At its
//     timeout (default 600 s) or when the run is cancelled the whole
//     group is killed (background grandchildren included) and the run
//     goes on: a failing, hanging or crashing hook is a non-blocking error,
//     logged and recorded, never a failed run.
//   - Exit code 0: stdout is parsed as JSON when it is JSON. Exit code 2:
//     block, the reason is stderr. Any other code: non-blocking error.
//   - The matching hooks of one event run concurrently (an identical
//     command once); the strictest decision wins (deny > ask > allow), and
//     the agent's tool_approval policy takes part in that comparison.
//     "continue": false stops what the point can stop: it blocks the
//     prompt, denies the tool call, blocks with feedback after a tool, and
//     ends the agent at Stop / SubagentStop (winning over a block).
//   - Loop guard: a Stop / SubagentStop hook called again after it blocked
//     gets stop_hook_active: true; after 8 consecutive blocks the agent
//     stops anyway (recorded as a hook_loop_guard event).
//   - Every run is recorded in the session's event log as
//     event.Custom{EventType: "hook_run"} with hook_event, command,
//     decision, duration_ms, exit_code (and matcher, reason, error,
//     timed_out, tool_name ... when they apply), emitted into the session's
//     sink so that the pool's recorder stores it in stream order.
//     SubagentStart runs are recorded in the parent's log. SessionStart and
//     SessionEnd runs happen outside the run (before run_started, after its
//     final event): they are appended to the session's log in the store
//     and not streamed, so a stream still begins with run_started and ends
//     with the run's final event.
package command
