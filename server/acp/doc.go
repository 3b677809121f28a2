// Package acp serves a pool to editors over the Agent Client Protocol
// (spec/PROTOCOLS.md §1): JSON-RPC 2.0 on a byte stream (stdin/stdout), one
// JSON object per line.
//
// # Transport
//
// Lines are read with a bufio.Reader, not a Scanner: a line may be up to
// Options.MaxLineBytes (32 MiB) long; a longer one is consumed without
// being buffered whole and answered with -32600 (id null). Blank lines are
// skipped, CRLF is accepted. Invalid JSON gets -32700 (id null); a batch
// (a JSON array) one -32600 with id null; anything that is not a request,
// notification or response -32600; an unknown method -32601; missing or
// ill-typed params -32602; a failure inside the server -32603; an unknown
// session -32002. After any of these the server goes on reading. Every
// message written is one line, flushed at once, and writes are serialized.
// Nothing but protocol messages goes to the writer: logs go to the logger
// (stderr in the CLI). Message text is sent in chunks of at most 64 KiB,
// cut between characters, so that no line is long whatever the message
// (a replayed prompt or answer may be over 10 MiB). A failed write (the
// client closed its end) cancels the running prompts; Serve then returns
// when the input ends.
//
// # Methods
//
// initialize advertises what is implemented: loadSession, session list and
// close, embedded context in prompts (no images or audio), MCP servers over
// stdio, http and sse (mcpCapabilities), and no auth methods (authenticate
// succeeds: there is nothing to authenticate); it records the client's
// fs.readTextFile, fs.writeTextFile and terminal capabilities.
// session/new stores a new root session and offers the pool's agents and
// teams as modes (current: Options.Agent or the manifest's default);
// session/set_mode switches the node that the next prompt runs;
// session/set_model (unstable ACP) runs that node's agent on another of the
// pool's agents' models (models.go).
// session/close cancels the session's prompt, stops its MCP servers and
// forgets it (it stays stored).
// session/load replays the stored history, then answers; a root whose run
// stopped (its process died) while a tool call of its tree waited for an
// approval then goes on (pool.Pool.Continue) as a prompt runs, without a
// request to answer: its history is replayed up to that run's prompt, and
// the run's stored events reach the editor through the run's converter,
// so that its request is asked again on its card. A root that runs on
// the pool's durable engine is followed instead (the engine's FollowRun:
// follow.go), from its open run, so that what its tree asks reaches the
// editor and the answer goes to the run. session/list lists
// the stored root sessions. session/prompt runs the current mode on the
// session with its history and answers {stopReason}: end_turn, max_tokens,
// refusal, max_turn_requests (the agent's max_turns), or cancelled; a run
// that fails is answered with -32603. session/cancel (and $/cancel_request
// for a prompt's request id) cancels the prompt's context: every descendant
// ends aborted and the prompt answers cancelled. session/cancel with the id
// of a running child of one of the connection's sessions, or the extension
// method _agentpool/session/cancel {sessionId} (a request answered {}, or
// a notification), cancels that child alone (pool.Pool.Cancel, by "acp"):
// it and its subtree end aborted, its spawn tool call fails with
// "Cancelled by the user (from acp).", and the prompt goes on. The
// extension answers -32002 for a session that is no descendant of the
// connection's, -32600 for one that is not running, -32602 without a
// sessionId; given the editor's own session it cancels its prompt
// (docs/control.md).
//
// # Mapping of the event stream
//
// Events of the root session become its own updates: text deltas
// agent_message_chunk, thinking deltas agent_thought_chunk, tool_call_start
// a tool_call (toolCallId, title, kind, status in_progress, rawInput, and
// the files the tool names from its input as locations [{path, line?}]),
// tool_call_progress a tool_call_update, tool_call_complete a
// tool_call_update with status completed or failed, locations when the
// result's differ from the tool_call's, rawInput when the tool_call had
// none (an external agent's call, whose input came later), and as content (rawOutput is left
// out: it would only repeat the text, and clients such as acpx show both):
// a {type: diff, path, oldText (null for a new file), newText} per file the
// call changed (Write, Edit), a {type: terminal, terminalId} when the
// command ran in the client's terminal (Metadata["terminal_id"]), and the
// result as text (left out when it only repeats a diff). plan_update
// becomes a plan.
//
// # Tools through the client
//
// Every prompt of a session runs in that session's workspace (its cwd,
// when it is an existing absolute directory; else the pool's, logged),
// with the session's MCP servers' toolsets (mcpServers of session/new and
// session/load: one mcp.Manager per session, stdio servers run in the
// workspace, names made [A-Za-z0-9_-] for the mcp__<name>__<tool> prefix;
// an invalid entry is -32602 naming it; the manager is closed by
// session/close, by a session/load that replaces it, and when the
// connection ends), and, as far as the client advertised them, its file
// system and terminals: fs/read_text_file and fs/write_text_file each only
// with its capability (the other goes to the disk), terminal/* with
// terminal. These are requests from the server to the client over the
// same machinery as session/request_permission, in the session's queue;
// each is bounded by the tool's context, so a client error or a cancelled
// prompt is an error result of the tool, never a hang (a late answer to
// an abandoned request is dropped). A terminal is embedded in the running
// tool call whose input command it runs as soon as it exists (the editor
// shows the output live) and again in the call's last update; the tool's
// terminal/release is held back until that update was sent (or the prompt
// ended), because an editor shows only terminals not yet released.
// Replays never embed terminals.
//
// How children are shown depends on what the client announced in
// initialize (spawnView). A client that announced neither
// clientCapabilities._meta.agentpool {spawn_tool_calls: true} nor
// subagents sees one tool call per delegation (viewFlat): a delegating
// tool call of the root (task, ask_<worker>, delegate_to, ask_agent)
// gets, at the child's spawn_session_start, a tool_call_update
// in_progress with the spawn _meta below and the description as content
// (it is not announced pending: the tool runs, and clients such as acpx
// show a tool_call's status until it ends); the child's
// progress, and its descendants' (their text as whole lines, their tool
// calls and ends, indented two spaces a level), is that call's content,
// bounded as below; it ends completed or failed once both the tool and the
// child are done (failed if either failed), with what the child did (less
// the answer at its end) and the answer (the tool's result, or the
// child's for a child that ran in the background). A child no root tool
// call started (a member of a root team) gets the spawn tool call below.
//
// For a client that announced the extension (or subagents), every child
// session, at any depth, is one tool call
// in the root ACP session: spawn_session_start becomes a tool_call with
// toolCallId "spawn:<child_session_id>", title "Spawned: <source_name>",
// kind other, status in_progress, the description as first content block
// and _meta.agentpool {type: spawn_start, child_session_id,
// parent_session_id, tool_call_id, spawn_mechanism, run_mode, source_type,
// depth}. The child's own events show as tool_call_update content of that
// tool call (its text, coalesced at most every Options.ProgressInterval and
// at part ends, and a line per tool call), bounded to the last 8 KiB.
// spawn_session_end becomes a tool_call_update with status completed
// (stop reasons completed, max_tokens, refusal) or failed (error, aborted),
// the child's answer as content, or why it did not finish in words
// ("Cancelled by the user.", "Failed: ..."), and the machine fields
// {child_session_id, stop_reason, error, usage, duration_ms, ...} in
// _meta.agentpool. A delegating tool's own result (task, ask_<worker>) is
// shown the same way: the answer as text, the child session in _meta.
//
// A client that advertises clientCapabilities.subagents (the SDK's unstable
// entry) additionally gets, on the child's immediate parent session, a
// subagent_update {sessionId: child, title, description, state: {state:
// running}} right after the spawn tool call, the child's own updates (as
// above) with sessionId = child, and at its end a subagent_update with
// state {state: idle, stopReason}.
//
// # Guarantees
//
//   - Order: the updates of a prompt are written in the order of the root
//     event stream, and all of them before the prompt's response.
//   - A child's spawn tool call precedes everything of that child: its
//     progress, its grandchildren's spawn tool calls, its subagent_update
//     and its own session updates. Content of a child whose start was never
//     seen first announces the child (reactive fallback).
//   - Every spawn tool call is closed exactly once, with completed or
//     failed, and nothing of the child follows; children the stream left
//     open, and tool calls that never completed, are closed as failed before
//     the response (Finish). For subagent clients every announced child
//     goes idle.
//   - Nothing is dropped: updates are written synchronously from the event
//     sink, so a slow client slows the run down (back-pressure) rather than
//     losing updates. Only a child's streamed text is coalesced.
//
// # Concurrency and shutdown
//
// A reader goroutine hands Serve one line at a time; Serve answers every
// request except session/prompt inline; each prompt runs in its own
// goroutine, one at a time per session. When the input ends (or ctx is
// done), Serve cancels the running prompts, waits for them (their answers
// are still written), stops every session's MCP servers and returns;
// pending client requests (request_permission, fs, terminal) then fail
// (their approval requests are withdrawn with the cancelled runs). The
// caller closes the pool, which flushes the store.
//
// # Approvals
//
// With Options.Approvals (an approval.Broker that the pool's hook registry
// asks: hook.Registry.UseBroker) the server is attached to the broker
// while Serve serves a connection, as the "acp" front end; without one it
// asks nothing. A pending request whose session belongs to one of the
// connection's ACP sessions (the root, or any descendant while the root's
// prompt runs) is shown to the editor; any other request is left to other
// front ends. Showing it is, on the root ACP session:
//
//   - a tool_call with status pending on the card the editor was shown
//     for the tool: the root's own tool call (its toolCallId, kind and
//     locations), or, for a descendant's tool at any depth, the child's
//     "spawn:<child>" tool call (with its progress as content, the
//     child's tool's kind); the title names the asking agent ("lead:
//     Write notes/a.md", "writer (child of lead): Write notes/a.md"),
//     rawInput is the tool's input and _meta.agentpool {type: approval,
//     request_id, session_id, agent, tool, tool_call_id, reason}. A
//     request that belongs to no shown tool call gets a card of its own,
//     "permission:<request id>";
//   - right after it, session/request_permission whose toolCall carries
//     exactly those fields (the editor's card does not change when it is
//     asked), with the options allow_once, allow_always, reject_once and
//     reject_always (their ids equal their kinds), the broker's four
//     replies. An outcome "cancelled", an unknown option or an error
//     response is a reject once that says why (the model is told).
//
// The editor's answer puts the card back before the run goes on: the
// root's tool call gets its own title (and status in_progress when it may
// run; a rejected one then ends failed with the rejection as its result),
// a spawn tool call all it showed before. A request settled otherwise (a
// rule made by an earlier "always", the broker's timeout, another front
// end, or its run's end: session/cancel, session/close, the end of the
// connection) is withdrawn from the editor with $/cancel_request
// {requestId} naming the session/request_permission (the client answers
// it as cancelled; that late answer is dropped), and its card is put back
// as well; a card that ends meanwhile gets its own title in its last
// update. So no question stays open, and every card ends as itself.
package acp
