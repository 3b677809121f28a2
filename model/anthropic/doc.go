// Package anthropic is the model provider for Anthropic's Messages API, a
// client of its own on net/http (no SDK): wire.go has the JSON it sends
// and reads, for the API version 2026-10-21 (the anthropic-version
// header).
//
// A Model sends each model.Request as one streaming request and turns the
// server-sent events into chunks:
//
//   - message_start: the input (and cache) token counts are kept;
//   - content_block_start/delta/stop: text_delta → ChunkText,
//     thinking_delta → ChunkThinking, a tool_use block → ChunkToolCall with
//     its id and name, then its input_json_delta pieces as ArgsDelta; Index
//     counts the tool_use blocks of the response (0, 1, ...);
//   - message_delta: one ChunkUsage (input from message_start, output from
//     message_delta) and the stop reason;
//   - message_stop: one ChunkFinish: end_turn and stop_sequence → stop,
//     tool_use → tool_calls, max_tokens → length, refusal → refusal.
//
// The system prompt goes in `system`; role "tool" messages become user
// messages of tool_result blocks. Thinking parts of the history are not sent
// back, since model.Part keeps no thinking signature; the manifest has no
// key to enable extended thinking. Temperature is not sent: API version
// 2026-10-21 has no such parameter.
//
// Configuration (Config, from the manifest's model keys): the key is
// Config.APIKey, else the variable named by APIKeyEnv, else
// ANTHROPIC_API_KEY; the base URL is Config.BaseURL, else
// ANTHROPIC_BASE_URL, else https://api.anthropic.com. No other ambient
// credential (profile files, federation) is used.
//
// Guarantees:
//
//   - A Model is immutable after New, holds no per-run state and is safe for
//     concurrent use by any number of sessions.
//   - Stream stops when ctx is cancelled (the HTTP request is bound to ctx
//     and the error is the context's cause) and when the consumer stops
//     iterating (the response body is closed). It starts no goroutine of
//     its own.
//   - Responses 408, 409, 429 and 5xx (529 overloaded included) and
//     connection errors are retried, at most MaxRetries times
//     (DefaultMaxRetries), with exponential backoff from 0.5s to 8s less up
//     to 25% jitter, honouring Retry-After (seconds or HTTP date),
//     Retry-After-Ms and the server's X-Should-Retry; a requested wait
//     above MaxRetryDelay is not retried. Retries happen only before the
//     response streams, so before any chunk is yielded.
//   - An event of the stream above 1 MiB ends it with an error (no
//     unbounded buffering); an error body is read up to 64 KiB.
//   - Failures are an *Error such as `anthropic: 401 unauthorized: <server
//     message> (...)` or `anthropic: stream error: overloaded_error:
//     Overloaded`. API keys never appear in errors, events or logs:
//     messages are built from the status and the server's message, and the
//     key is redacted from anything the server echoes. Transport errors
//     never show the request URL.
package anthropic
