// Package agui serves a pool over AG-UI 1.0 (spec/PROTOCOLS.md §2): the
// HTTP + server-sent-events protocol of web front ends such as CopilotKit
// and @ag-ui/client.
//
// # Endpoints
//
//	POST /               run the default agent (RunAgentInput → event stream)
//	POST /agents/{name}  run a named agent or team
//	GET  /agents         {"agents": [{name, description?, type, default?}]}
//	GET  /healthz        {"status": "ok"}
//	GET  /approvals      {"approvals": [Approval]}: the tool calls waiting for an answer
//	POST /approvals/{id} answer one: {"reply": allow_once | allow_always | reject_once |
//	                     reject_always, "message"?} (see Approvals)
//	POST /sessions/{id}/cancel
//	                     cancel one running session (a child's subagentRunId: that
//	                     child alone, its parent goes on; a run's root: the run):
//	                     {sessionId, cancelled: true} once it has ended; 404 unknown,
//	                     409 not running (docs/control.md)
//
// A run answers 200 text/event-stream with one "data: <json>\n\n" per
// event (LF only, one line of compact JSON each). Requests that cannot run
// answer a JSON body {"error": "..."}: 400 malformed JSON or a missing or
// mistyped required field (threadId, runId, messages), no user message, a
// threadId over MaxThreadIDBytes (256); 404 unknown agent or path; 405
// wrong method; 408 the body did not arrive within Options.BodyTimeout
// (60 s); 409 the thread has a run in progress; 413 body over
// Options.MaxBodyBytes (8 MiB); 415 Content-Type other than
// application/json. Serve holds at most Options.MaxConns (256) connections
// and answers a refused request (token, Host, origin; package httpsec)
// without reading its body. The prompt is the text of the last user
// message (a string, or the text parts of a content array joined by
// newlines). state is the client's state (see State below); context and
// tools are lent to the run (see Front-end tools); forwardedProps is
// ignored; a resume is a 400 (the server never ends a run with an
// interrupt: approvals are CUSTOM events, see Approvals).
//
// # Front-end tools
//
// The context entries join the root agent's system prompt in every model
// request of the run (pool.RunRequest.Instructions, not stored); the
// tools are offered to its model (pool.RunRequest.ClientTools). Bounds:
// MaxContextEntries, MaxContextBytes, MaxContextTotalBytes,
// MaxClientTools and the tool field bounds; a tool named as one of the
// agent's own, or context and tools for a node that is not a plain
// agent, is a 400. A model turn that calls a client tool ends the run:
// the call is streamed (TOOL_CALL_START/ARGS/END), the turn's other calls
// run, and RUN_FINISHED has no result and no TOOL_CALL_RESULT precedes it,
// so the client reads the call as pending. The thread's next run with a
// tool message for the call (toolCallId) brings its result
// (session.OpenCalls of the stored conversation;
// pool.RunRequest.ClientResults): it is recorded as the call's result
// (tool message, tool_call_complete, not streamed back), a user message
// after it is the prompt, and the agent takes its next turn.
//
// # Threads
//
// threadId ↔ root session id. A threadId that has the shape of a session
// id is used as the root session id. Any other threadId (clients mint
// UUIDs) gets a fresh session id, recorded in an in-memory table and in the
// root session's metadata ("agui_thread_id", session.MetaThread), so
// threads survive a restart with a persistent store. The table keeps
// Options.MaxThreads (10,000) threads; the least recently used idle ones
// are forgotten beyond that. A thread not in the table (new, forgotten, or
// from before a restart) is looked up in the store through its index of
// thread ids (session.ListOptions.Thread): what a run costs does not grow
// with the number of threads stored. A run on a thread
// whose session exists continues it with its stored history
// (pool.RunRequest.SessionID); the messages the client sends besides the
// last user message are not replayed, the store is the conversation's
// memory.
//
// # Mapping
//
// The pool's root stream (spec/EVENTS.md) becomes:
//
//	run start                 RUN_STARTED{threadId, runId, parentRunId?, protocolVersion}, then
//	                          STATE_SNAPSHOT{snapshot} when there is state (see State)
//	part_start index 0        STEP_STARTED{stepName: "turn N"} (closing the previous turn's step):
//	                          one step per model turn of a session, open while its tools run
//	text part                 TEXT_MESSAGE_START{role: assistant} / _CONTENT / _END; all text of a
//	                          turn is one message, and the turn's tool calls name it as parentMessageId
//	thinking part             REASONING_START, REASONING_MESSAGE_START{role: reasoning},
//	                          REASONING_MESSAGE_CONTENT, REASONING_MESSAGE_END, REASONING_END
//	tool_call part            TOOL_CALL_START{toolCallId, toolCallName, parentMessageId?} / _ARGS / _END
//	tool_call_start           nothing when its part announced the call; else (a producer without
//	                          model parts: an external ACP agent) TOOL_CALL_START, _ARGS (its raw
//	                          input, when it has one) and _END at once
//	tool_call_complete        TOOL_CALL_RESULT{messageId, toolCallId, content: the tool's result text
//	                          (a delegation's: the child's answer in words, with child_session_id
//	                          and stop_reason in metadata.agentpool),
//	                          role: tool, metadata?: {agentpool: {is_error?, locations?, diffs?,
//	                          diffs_omitted?, metadata?, input?}}} (the event's front-end fields;
//	                          input: of a call announced without one, up to 64 KiB)
//	spawn_session_start       SUBAGENT_STARTED{subagentRunId: child session id, name: agent or team,
//	                          description?, parentSubagentRunId? (the spawning session when it is a
//	                          subagent), parentToolCallId? (the spawning tool call), parentMessageId?}
//	                          then ACTIVITY_SNAPSHOT{subagentRunId, messageId, activityType:
//	                          "subagent", content: {name, description?, status: "running",
//	                          messages: [], toolCalls: []}}: the child's activity message
//	a child's content         ACTIVITY_DELTA{subagentRunId, messageId, activityType, patch} on
//	                          that message (activity.go): text and thinking parts append
//	                          {role: assistant | reasoning, content: []} to /messages, and
//	                          each delta is appended to its content (/messages/N/content/-,
//	                          a list of text pieces: JSON Patch cannot append to a string);
//	                          tool calls append {id, name, args: [pieces], status: running}
//	                          to /toolCalls, their streamed input goes to
//	                          /toolCalls/N/args/-, their end sets status (completed |
//	                          failed), result
//	                          (the readable text) and metadata (as TOOL_CALL_RESULT's); the
//	                          end sets /status (completed | failed) and /result or /error.
//	                          Bounded: 64 KiB a text, 256 entries a list, then /truncated.
//	                          Not TEXT_MESSAGE_*/TOOL_CALL_*: @ag-ui/client puts those in the
//	                          run's messages whatever their subagentRunId, so a chat shows a
//	                          child's words as the main agent's and sends them back as the
//	                          next run's conversation; an activity message (role "activity")
//	                          it keeps apart and leaves out of the next input. A child's
//	                          CUSTOM events (progress, plan_update, approvals) carry its
//	                          subagentRunId
//	spawn_session_end         SUBAGENT_FINISHED{result?} when completed (or max_tokens, refusal),
//	                          else SUBAGENT_ERROR{message, code: stop reason}
//	tool_call_progress        CUSTOM{name: "tool_call_progress"} (droppable, see below)
//	plan_update of the root   the state's "todos": STATE_SNAPSHOT or STATE_DELTA (see State)
//	plan_update of a child    CUSTOM{name: "plan_update", value: the event, subagentRunId}
//	custom                    CUSTOM{name: event_type, value: event_data}
//	(approval broker)         CUSTOM{name: "approval_asked" | "approval_replied"} (see Approvals)
//	run end                   RUN_FINISHED{result: final text} when the root completed;
//	                          RUN_FINISHED{outcome: {type: cancelled}} when it was aborted
//	                          (server shutdown); RUN_ERROR{message, code} when it failed
//
// run_started of children and stream_complete add nothing (their
// information is already in the events above). A root run_error is
// held back until the run ends, since async children may still report
// after it; a child's run_error supplies the message of its SUBAGENT_ERROR.
//
// Guarantees: RUN_STARTED is first; RUN_FINISHED or RUN_ERROR is last and
// nothing follows it; before it, every open message, reasoning span, tool
// call, step and subagent is closed (innermost first), also when the run
// failed or a child never reported its end; a session's events keep their
// order; no subagentRunId is used twice and a parent subagent is always
// started before its children; optional fields are omitted, never null;
// timestamps are integer Unix milliseconds.
//
// # State
//
// The AG-UI state of a thread is the client's RunAgentInput.state with one
// member the server owns: "todos", the todo list of the thread's root
// session (TodoWrite's plan_update), each entry {content, status: pending |
// in_progress | completed, priority, activeForm?}:
//
//	{"todos": [{"content": "Fix the typo", "status": "in_progress",
//	            "priority": "medium", "activeForm": "Fixing the typo"}], ...client members}
//
// The server's list wins over a "todos" the client sends; every other
// member is the client's and is echoed untouched (the server never reads
// it). A subagent's list is no thread state (subagent runs never recur): it
// stays a CUSTOM plan_update event attributed to the subagent.
//
// Within a run the first state event is a STATE_SNAPSHOT with the whole
// state, and every later change a STATE_DELTA (RFC 6902) against what the
// client then holds: per-field replace, add and remove operations on
// /todos/N, an add of /todos when the client's state had none, or one
// replace of /todos when that is shorter or the client's list was its own.
// An unchanged list sends nothing. The opening snapshot goes right after
// RUN_STARTED when the thread has a todo list from earlier runs (read from
// the root session's event log, so it survives a restart with a persistent
// store) or the client sent a state other than {}; else the first todo
// list of the run is the snapshot. A client state that is no JSON object is
// echoed, and replaced by {"todos": [...]} when a list arrives. State
// events are never attributed to a subagent, never dropped or merged.
//
// # Approvals
//
// With Options.Approvals (an approval.Broker that the pool's hook registry
// asks: hook.Registry.UseBroker) the server is attached to the broker until
// Close, as its AG-UI front end ("agui"). AG-UI 1.0's interrupt outcome
// ends the run and answers on the next run; a pool run waits inside the
// tool call instead, so a pending request is a mid-run CUSTOM event and the
// answer comes over HTTP:
//
//	approval_asked    value {id, sessionId, parentSessionId?, agent, tool, title, input (an
//	                  object), toolCallId?, reason?, options: [allow_once, allow_always,
//	                  reject_once, reject_always]}, attributed to the subagent where the tool runs
//	approval_replied  value {id, sessionId, reply, by: agui | another front end | rule |
//	                  timeout | cancelled, message?}
//
// Guarantees: a run's stream carries the requests of the sessions of its
// tree and no other; approval_asked follows the call's TOOL_CALL_END; every
// request it announced gets its approval_replied before the call's
// TOOL_CALL_RESULT and before the run's last event (the broker queues the
// notice before it wakes the run; the stream waits for it), also when the
// request was withdrawn (the run was cancelled: reject_once by cancelled)
// or answered elsewhere; an approval_replied whose subagent has ended is
// attributed to its nearest open ancestor. The broker's delivery only
// appends to each streaming run's inbox, so no client holds up the broker
// or another run; a goroutine per run maps the notices while the run waits.
//
// POST /approvals/{id} takes the first answer (200 {id, reply}); a later one
// is 409, an unknown id 404, a body that is not exactly {reply, message?}
// 400 {error, field}, a body over 64 KiB 413, another Content-Type 415.
// GET /approvals lists the pending requests, oldest first, each with the
// threadId and runId of the run that shows it (?threadId= keeps one
// thread's). Without Options.Approvals the list is empty and every answer
// is 404. The routes are behind the same token, Host and CORS checks as the
// others.
//
// # Delivery
//
// The run is the producer (the pool's recorder serializes the sink) and
// the HTTP handler the consumer; between them is a bounded queue
// (Options.QueueSize events, 1024 by default). The run never waits for the
// network while the queue has room. A text, reasoning or argument delta
// whose message or tool call has the queue's last event (a delta the
// writer has not taken yet) joins it: the client concatenates deltas, so
// it gets the same text in fewer events. When the queue is full:
//
//   - a text, reasoning or argument delta joins the latest queued delta of
//     the same message or tool call, provided no other event of the same
//     session lies between them (so no session's order changes, and no
//     content is lost); a joined delta is capped at 64 KiB and has the
//     timestamp of its first part;
//   - a droppable event (tool progress) is dropped;
//   - anything else (starts, ends, results, state, subagent lifecycle, run end)
//     is never dropped or merged: the producer waits until the writer
//     takes the queue's contents.
//
// So a slow client holds a run back by at most a bounded buffer.
//
// The writer writes what the queue holds in one write and one flush, and
// at most once per Options.FlushInterval (20 ms): the events that come
// within it of the last write wait for its end and go out together. A
// model's deltas (a few milliseconds apart) then share the system calls
// of both ends of the socket, which were most of what a delivered event
// cost; the first event after a quieter spell goes out at once, and no
// event waits longer than the interval for the writer. A client that
// accepts nothing for Options.WriteTimeout (1 minute) is treated as gone. A client that disconnects cancels its run: the run's context is the
// request's, so every descendant is cancelled and ends "aborted" in the
// store (and its pending approvals are withdrawn); from then on nothing waits for the client, and the handler returns
// once the run has wound down. Server.Serve cancels the runs in flight when
// its context ends, and their clients still receive the end of their
// stream.
package agui
