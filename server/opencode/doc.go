// Package opencode serves a pool over the OpenCode server API
// (spec/PROTOCOLS.md §3; route shapes and field names of the OpenAPI
// document that opencode 1.18.33 serves): the HTTP + server-sent-events
// API whose clients are the OpenCode TUI and @opencode-ai/sdk.
//
// # Routes
//
// Every route accepts ?directory= (the SDK sends it as that query
// parameter on reads and as the URI-encoded x-opencode-directory header on
// writes). GET /doc is an OpenAPI 3.1 document generated from the route
// table and the wire types (internal/wire, routes.go), so it lists exactly what
// is served.
//
//	POST   /session                      create {parentID?, title?, agent?, metadata?} → Session
//	GET    /session                      ?roots, ?limit, ?search, ?start; newest first
//	GET    /session/status               {id: {type: busy}} of the running sessions only
//	GET    /session/{id}                 Session
//	PATCH  /session/{id}                 {title?, metadata?} → Session
//	DELETE /session/{id}                 the session and its subtree (a run in it is aborted) → true
//	GET    /session/{id}/children        the child sessions, oldest first
//	GET    /session/{id}/message         [{info, parts}]; ?limit (last N), ?before (message id)
//	GET    /session/{id}/todo            the todo list [{content, status, priority}] ([] when none)
//	POST   /session/{id}/message         {parts, agent?, model?, system?, tools?, noReply?, messageID?}:
//	                                     waits for the turn, answers {info, parts} of its last
//	                                     assistant message (noReply: stores the user message only)
//	POST   /session/{id}/prompt_async    the same, answered 204 at once
//	POST   /session/{id}/abort           cancels the run and the queued prompts → true (a
//	                                     running child: that child alone)
//	GET    /permission                   pending permission requests (Options.Approvals), oldest first
//	POST   /permission/{requestID}/reply {reply: once | always | reject, message?} → true
//	POST   /session/{id}/permissions/{permissionID}
//	                                     deprecated: {response: once | always | reject} → true
//	GET    /event                        SSE of the request's directory (every directory without one)
//	GET    /global/event                 SSE of every directory, frames {directory, payload}
//	GET    /path, /config, /config/providers, /agent, /project/current, /global/health, /doc
//
// A session is a stored session (session.Store): OpenCode's Session
// {id, slug, projectID, directory, parentID?, title, version, agent, model,
// time{created, updated}, cost, tokens{input, output, reasoning,
// cache{read, write}}}, where cost and tokens are the subtree's totals once
// a run has ended. Session ids are descending (newest sort first); message,
// part and event ids ascending. The directory a session was created in is
// kept in its metadata (MetadataDirectory); children inherit it. A
// session's first prompt titles a session created without a title.
//
// Prompts: text parts are the prompt; agent and subtask parts are kept in
// the user message and add an instruction to delegate with the task tool;
// file parts are refused. agent picks the pool node (agent or team) that
// runs the turn (else the session's last one, else the default node).
// model must be one GET /provider lists (else 400); another agent's runs
// the turn of the root agent on that agent's model, its children on their
// own (modelchoice.go). The manifest decides system prompt and tools:
// system and tools are accepted and recorded in the user message, not
// applied. The prompts of one session run one at a time, in the order
// they came.
//
// # Mapping
//
// Runs go through the pool (pool.RunSink), whose processor records them;
// the server keeps its own session-tree projection of every run that
// starts while it serves (processor.Projection, watching the pool's
// processor) and subscribes to it. Its Changes map one to one to
// OpenCode's bus events:
//
//	SessionCreated   session.created {sessionID, info} (a child with parentID and the title
//	                 "<description> (@<agent> subagent)"), then session.status busy
//	SessionUpdated   session.updated {sessionID, info}; session.status busy when it starts running
//	MessageUpdated   message.updated {sessionID, info}: user {id, sessionID, role, time, agent,
//	                 model}, assistant {…, parentID, modelID, providerID, mode, agent, path, cost,
//	                 tokens, finish?, error?}; a new assistant message (one model response, a step)
//	                 is followed by its step-start part, a completed one preceded by its
//	                 step-finish part {reason, cost, tokens}
//	PartUpdated      message.part.updated {sessionID, part, time}: text, reasoning, tool {callID,
//	                 tool, state: pending | running | completed | error}
//	PartDelta        message.part.delta {sessionID, messageID, partID, field: "text", delta}
//	SessionIdle      session.status {type: idle}, then session.idle {sessionID}
//	SessionError     session.error {sessionID, error: MessageAbortedError | UnknownError}
//	PlanUpdated      todo.updated {sessionID, todos: [{content, status, priority}]}
//	(approvals)      permission.asked {PermissionRequest}, permission.replied {sessionID,
//	                 requestID, reply: once | always | reject} (see Permissions)
//
// # Permissions
//
// With Options.Approvals (an approval.Broker that the pool's hook
// registry asks: hook.Registry.UseBroker) the server is attached to the
// broker for its life, as OpenCode's front end of it. A tool call that
// needs approval is a PermissionRequest {id: per_…, sessionID: the session
// the tool runs in (a child's own; deeper than a root's child, its
// ancestor that is a root's child, since the 1.18.33 TUI shows prompts
// only in a root's view and only for the root and its children; then
// metadata.sessionID names the session the tool runs in), permission:
// OpenCode's (edit for Write
// and Edit, bash, read, glob, grep, list, webfetch, task; else the tool's
// name), patterns (the file, the command, ...), metadata (filepath and a
// unified diff for edit, command for bash; agent, title and the reason
// it asks), always: ["*"] (an "always" answer covers the agent's tool),
// tool: {messageID, callID} of its tool part}. It is published as
// permission.asked, after a session.updated of its session (the TUI lists
// a session on session.updated only, and shows the prompts of the
// sessions it lists), and listed on GET /permission. The first reply
// decides (once, always, or reject with the user's message, which the
// model sees); permission.replied follows, also when the request is
// withdrawn (the run was aborted: reply reject). A reply to no pending
// request is 404 PermissionNotFoundError {_tag, requestID, message}; a
// body that is not {reply} (or {response}) with one of the three values,
// and nothing else, is 400 InvalidRequestError {_tag, message, kind,
// field}. Without Options.Approvals GET /permission is [] and replies are
// 404.
//
// Tool parts of the builtin tools (Claude Code's Read, Write, Edit, Glob,
// Grep, LS, Bash, TodoWrite, WebFetch) are shown as OpenCode's own (read,
// write, edit, glob, grep, list, bash, todowrite, webfetch): OpenCode's
// input field names, titles and the metadata its renderers read (a
// unified diff for edit and write, output and exit for bash, todos for
// todowrite, ...), from one table (tools.go). Other tools keep their
// names. The history shows the same shapes, from the conversation and the
// event log.
//
// A session's todo list is its latest plan_update (TodoWrite): GET
// .../todo answers the live one while the session is projected, else the
// last of its event log (stored sessions keep theirs across restarts).
//
// The server adds what the processor cannot know: the user message of a
// root prompt (with the parts the client sent, before the run starts), the
// parentID of the root's assistant messages, and the root's end: when the
// run has ended and the store holds its totals, session.updated, then
// session.status idle and session.idle (the processor's idle of a root run
// by this server is held back until then, so that after session.idle GET
// shows the final state and the session takes the next prompt).
//
// Delegation, as OpenCode shows its task tool: the child's session.created
// (parentID, subagent title) comes before anything of the child; the
// spawning tool part of the parent (the task or ask_<worker> call; for a
// team member, a task part in the team session) goes running with
// metadata {sessionId: <child>, parentSessionId, spawnMechanism, runMode};
// the child's events carry the child's sessionID; the child ends with
// session.idle; then the parent's part goes completed with the child's
// output (the "output" of the spawning tool's {output, session_id}
// result) or error. A task call's input also names the agent as
// subagent_type. No part is left pending or running after its session
// ended.
//
// GET /session/{id}/message answers the messages the events built, with
// the same ids (kept in memory for Options.MaxSessions sessions, the
// least recently used of the others dropped). A child's prompt, cut to
// 200 bytes in its spawn event, is answered whole from the store. Other
// sessions (an earlier process, or dropped) are rebuilt from the stored
// conversation: user text; one assistant message per model response
// with step-start, text, reasoning and tool parts and step-finish; tool
// results folded into their tool part (linked to the child session named
// by a spawning tool's result); a team session gets a task part per
// member. Rebuilt ids are derived from the stored ones, stable between
// calls. A root whose run goes on after a restart (pool.Pool.Continue,
// not a prompt of this server) gets its events from its run's first
// model turn on: the first GET puts the stored conversation up to that
// run's prompt before them.
//
// # Delivery
//
// The processor calls the server inside the run's recorder, so the server
// never waits there: it publishes to a hub in which every SSE client has
// its own queue. Events of one session keep their order on every stream,
// and event ids ascend on every stream (each stream numbers the events it
// writes: the same event has another id on another stream). Below Options.QueueSize (1024) queued events
// everything is queued; above it a delta joins the latest queued delta of
// the same part when no other event of its session lies between (no text
// is lost, no order changes); anything else is still queued. Lifecycle
// events are never dropped or merged. A client 16 × QueueSize events
// behind is disconnected (its stream ends) rather than stall runs or grow
// without bound. An idle stream gets a ": ping" comment every
// Options.Heartbeat; a client that accepts nothing for
// Options.WriteTimeout is dropped.
//
// # Status and abort
//
// A session is in GET /session/status ({type: busy}) from the start of
// its run (a child: from its session.created) to its session.idle.
// POST /session/{id}/abort cancels the run's context: every descendant
// ends aborted (session.idle, its tool part in the parent error), the
// root's session.error is a MessageAbortedError; abort answers true once
// the run has wound down (at most 10 s), so the session is idle by then.
// Aborting a child session that runs in its root's run (it has no prompt
// of its own) cancels that child alone (pool.Pool.Cancel, by "opencode",
// or "web" for the web view's requests, as approvals are labelled):
// it and its subtree end aborted, its tool part in the parent is an error
// that says the user cancelled it, and the parent and its siblings go on;
// abort answers once the child has ended. Aborting an idle child answers
// true and does nothing (docs/control.md). A blocking prompt whose client
// goes away keeps running; only abort, DELETE or shutdown end it.
//
// # Errors
//
// Unknown session ids (path or parentID): 404
// {"name":"NotFoundError","data":{"message":"Session not found: <id>"}}.
// Malformed or mistyped bodies and query parameters: 400
// {"name":"BadRequest","data":{"message", "kind": "Body" | "Query"}}
// (opencode's BadRequestError); a body over Options.MaxBodyBytes (8 MiB):
// 413 with the same body, one that did not arrive within
// Options.BodyTimeout (60 s): 408 with the same body; a prompt past the
// prompt budget (below): 429 {"name":"QueueFullError","data":{"message"}},
// or 413 with the BadRequest body when it alone is larger than a byte
// bound, the message naming the bound; another method on a served
// path: 405; an unknown path: 404 NotFoundError; a handler panic: 500
// UnknownError. The server keeps serving after each. Serve holds at most
// Options.MaxConns (256) connections and answers a refused request (token,
// Host, origin; package httpsec) without reading its body.
//
// # Prompt memory
//
// A prompt is counted from before its body is read (its Content-Length,
// else the most a body may be) to the end of its run: being received,
// waiting or running. A session holds at most Options.MaxSessionPrompts
// (16) prompts and Options.MaxSessionPromptBytes (16 MiB) of request
// bodies, the server at most Options.MaxPrompts (1024) and
// Options.MaxPromptBytes (64 MiB); the excess is refused before its body
// is kept (it is read and dropped, so that the client gets the answer).
// A prompt's text is in memory once (its parts' strings point into it),
// and once its run has ended (or a noReply prompt is stored), the
// transcript keeps a user text over 64 KiB cut to 200 bytes, with the
// size and SHA-256 of the stored text that holds it; GET .../message
// reads it back from the store (a team's root keeps no conversation: its
// prompt stays whole).
//
// # Web front end
//
// Options.UI mounts a web front end (package server/web, `agentpool
// serve web`) beside the API: the GET and HEAD requests it says it Serves
// (its page at / and its files under /ui/) are answered by it after the
// Host and origin checks but without the token check (they hold no
// data); every other request is the API's, unchanged, 404 included.
// Without Options.UI nothing differs.
//
// # Concurrency
//
// The server is split by concern: the route groups sessionsAPI
// (sessions.go, sessiondiff.go), historyAPI (history.go, todo.go: the
// messages and todo list), promptsAPI (runs.go: prompts, their queue and
// abort), eventStreams (events.go: SSE and the waits on it), configAPI
// and instanceAPI (info.go, instance.go), and the eventMapper (mapper.go)
// that turns the projection's changes into bus events. They share base
// (state.go): what New sets, read-only after, and the handles below. No
// lock covers every session.
//
//   - sessState.mu, one per session, guards the session's transcript (its
//     message list and the two maps that index it), its prompt queue
//     (sessionRuns) and its run in progress. The mapping of a change and
//     the server's own writes to a session (a prompt's user message, a
//     run's end, a title, a deletion) hold it while they publish the
//     session's events, so a session's events keep the order of its
//     state. Its directory, title and busy flag are atomics, read without
//     it. A holder of a session's lock waits for no other session's lock:
//     eviction only tries others (TryLock), directories are atomics.
//   - sessionFacts (a sync.Map) finds a session's state; the transcripts
//     in memory are counted and bounded with atomics (an LRU clock per
//     session); one eviction scan runs at a time (TryLock).
//   - promptBudget.mu guards the prompt budget's counts (the server's and
//     one map by session): taken per prompt (admitted, sized, ended),
//     never per event.
//   - The hub takes no lock to publish: an event is pushed to each
//     subscriber's queue under that queue's own lock (a stream that
//     carries every session is one queue: the one lock those sessions'
//     events share, held for an append). Each stream gives the events it
//     writes their ids, from its own generator, so ids ascend on every
//     stream; two streams may interleave different sessions' events
//     differently (each session's own order is kept on both). hub.mu
//     serializes subscribe and unsubscribe.
//   - runGate.mu makes the check that the server is not closing and the
//     WaitGroup's Add one step, so that Close's Wait never races an Add.
//   - The broker's notices (permissions.go) come from its delivery,
//     which holds no lock of the broker; each takes the lock of the
//     request's session to publish, like the mapper.
//
// Lock order: a session's lock, then promptBudget.mu or a subscriber
// queue's lock (each taken last, never both at once). The processor's
// projection calls the mapper with none of these held.
//
// Server.Close (and Serve when its context ends) cancels the runs in
// flight, answers their blocking prompts, ends every event stream and
// stops watching the processor; no goroutine outlives it.
package opencode
