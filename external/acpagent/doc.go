// Package acpagent makes an external agent that speaks the Agent Client
// Protocol (ACP) on stdio (Claude Code through claude-agent-acp, Codex
// through codex-acp, `opencode acp`, `goose acp`, `gemini
// --experimental-acp`, any other) a node of the pool: a team member, a
// worker, a target of the task tool, or the root. agentpool is the ACP
// client here; package server/acp is the other side (agentpool as an ACP
// agent). The protocol's types and JSON-RPC connection are those of
// github.com/coder/acp-go-sdk.
//
// Package batteries wires the kind into the pool (pool.Registry.SetExternal),
// so that the core does not depend on this package nor on the SDK.
//
// Guarantees:
//
//   - One agent process per member per root run: the first delegation to
//     the member starts it (a process tree, internal/proctree) and
//     initializes it (the fs capabilities as AllowFileOperations says,
//     the terminal capability as AllowTerminal says, within InitTimeout);
//     the member's later delegations in the run reuse it, each in a
//     session of its own (session/new with the member's directory and MCP
//     servers: those whose transport the agent's initialize does not
//     offer are left out, each a toolset_error event). The run's end stops it (stdin closed, then its tree
//     killed after CancelGrace): no agent process outlives the run. An
//     agent that exited is started again by the next delegation.
//   - A delegation stores its ACP session's id on its child session
//     (Metadata[MetaSessionID]). A run of that stored child (continued)
//     loads it (session/load) when the agent offered loadSession, and
//     prompts it with the new prompt alone; the updates the agent replays
//     while loading are dropped. An agent that cannot load, or whose load
//     fails, gets a new session whose first prompt carries the earlier
//     conversation as text (its latest 64 KiB), as does a delegation
//     given the caller's history (spawn.Request.History). A continued
//     child's stream says which happened (an EventContinued custom
//     event).
//   - Each delegation is an observable session: run_started, then the
//     agent's session/update notifications as they come (message chunks
//     as text parts, thought chunks as thinking parts, tool_call and
//     tool_call_update as tool_call_start / tool_call_progress /
//     tool_call_complete, plans as plan_update), then stream_complete
//     with the agent's final message (its text after its last tool call)
//     and the finish reason in the pool's words (stop, length, refusal),
//     or run_error. tool_call_complete carries the input and files the
//     agent named last (opencode names them only while the call runs), and
//     a title the agent gives a call as it ends comes just before as
//     tool_call_progress. A tool call the agent leaves unfinished is
//     completed as failed; a notification that comes after the prompt's
//     answer is dropped. The user prompt and the final message are stored as the
//     session's conversation; usage and cost are the agent's when it
//     reports them.
//   - Cancelling the run sends session/cancel; an agent that does not
//     answer within CancelGrace is killed. Nothing else bounds a prompt
//     (but a spawn timeout, which cancels it): a hung agent holds its
//     delegation until the run is cancelled. An agent that cannot start,
//     crashes or answers with an error fails its delegation only (stop
//     reason error), with the tail of its stderr; the parent goes on.
//   - fs/read_text_file and fs/write_text_file are served by our file
//     tools (Read, Write of package tool/files) in the member's directory:
//     the path is confined to it (os.Root), tools/pre-execute hooks and
//     the member's tool_approval apply (Write asks by default), and a file
//     that exists must be read before it is written, except by the write
//     of an edit the agent was granted through session/request_permission
//     with the file and a unified diff (opencode's): once, and only when
//     the content is the file as it is now with that diff applied (or is
//     its text already). Without AllowFileOperations the capability is
//     not offered.
//   - terminal/* is served by a Bash tool (package tool/shell) of the
//     delegation's own: terminal/create is a Bash call with
//     run_in_background in the member's directory (a cwd must resolve
//     inside it), through tools/pre-execute (hooks, the member's
//     tool_approval for Bash, which asks by default, the approval flow)
//     with the command line /bin/sh -c runs (env exported, command as
//     written, args quoted); output, wait_for_exit, kill and release
//     drive its background shell (shell.Background). What the command
//     changes is checkpointed (checkpoint.Watcher): the workspace is
//     scanned around terminal/create and again when the command's end is
//     seen (wait_for_exit, output with an exit status, kill, release, the
//     delegation's end), for the prompt the agent answers and the tool
//     call that showed the terminal. A terminal keeps
//     the last outputByteLimit bytes of its output (1 MiB at most), cut at
//     a character boundary; at most 32 terminals are not released per
//     delegation. When the delegation ends its terminals are killed with
//     their process trees before Run returns. Without AllowTerminal the
//     capability is not offered.
//   - A node given tools (WithTools: pool.ToolNode, the member's
//     toolsets and workers) serves them, with the toolsets lent to the
//     run, to its agent as the MCP server ServedName of each session/new:
//     streamable HTTP, stateless, on a 127.0.0.1 listener of the member's
//     agent in the run (closed with it), each delegation under a path of
//     its own holding 32 random bytes, removed when the delegation ends;
//     loopback Host names only, 4 MiB per request, 32 connections. A call
//     runs in the child session (its invocation in the context, so that a
//     delegation from it is a child of that session) through
//     tools/pre-execute and tools/post-execute, under the id the agent
//     announced the call with when it did (claim); the delegation's end
//     cancels the calls still running and waits for them. An agent that
//     takes no MCP over HTTP gets ServedName as a stdio server running
//     Config.Relay (`agentpool mcp-relay`, package mcprelay) with the
//     route's URL in its environment; without a Relay it is served
//     nothing (a toolset_error event).
//   - What reaches the child session's inbox while the agent works (an
//     async delegation's result, an injected message) is the agent's
//     next session/prompt once its turn ended (spawn.Invocation.
//     WaitInjected): the session ends when its agent's turn ended and
//     nothing is pending.
//   - session/request_permission goes to the pool's approval flow
//     (hook.Registry.RequestApproval: the approval broker of
//     docs/approvals.md), labelled with the member and its child session;
//     a refusal, or no approval flow, picks the agent's reject option;
//     Confirm never grants at once (allow once). Cancelling the run
//     withdraws the question.
//
// Not yet: a durable engine's runs (such a delegation fails, saying so).
package acpagent
