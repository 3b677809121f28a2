// Package agent is one agent (a model, a system prompt, tools) and its run
// loop: prompt → model stream → tool calls (concurrently when the model
// asks for several) → results → next model turn, until the model answers
// without tool calls or max_turns is reached.
//
// An Agent holds no per-run state, so one Agent serves any number of
// concurrent runs in different sessions. A run emits, in order:
// run_started; per model turn the part_start / part_delta / part_end events
// of the response, then tool_call_start and tool_call_complete for each
// tool call; and finally exactly one of stream_complete or run_error.
//
// Of one response's tool calls, at most Config.MaxToolCallsPerTurn run
// (DefaultMaxToolCallsPerTurn, 64); a call that repeats the id of an
// earlier call of the response gets a fresh id (model.Part.DuplicateOf
// keeps the repeated one) and does not run. A call that does not run
// still has its tool_call_start and a failed tool_call_complete, and its
// error result tells the model why, so every call of the conversation has
// a unique id and one result, as providers require.
//
// A run continued after its process died while some of its calls waited
// for a person's answer (Invocation.Continue: spawn.Continuation) emits
// no run_started: it gives the open calls of its last turn their results
// (those in the log kept, a waiting request asked again through
// ApprovalResumer, a waiting child continued), then takes its next turn.
//
// A root run can be lent a client's tools (Invocation.ClientTools, an
// AG-UI front end's): offered to the model, run by the client. A turn
// that calls one runs its other calls, announces the client's
// (tool_call_start) and ends the run (stream_complete, stop reason
// completed, Result.ClientCalls), leaving them open in the conversation.
// The session's next run brings their results (Invocation.ClientResults):
// it records them (tool_call_complete and a tool message) before its
// prompt and goes on. Invocation.Instructions join the system prompt of
// the run's model requests.
//
// Cancelling the context stops the run promptly: the model stream and the
// running tools see the cancellation, the run ends with run_error (code
// "aborted") and stop reason aborted, and Run returns only after every
// goroutine it started has finished.
package agent
