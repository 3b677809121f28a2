// Package openai is the model provider for OpenAI's Chat Completions API and
// every server that speaks it (Azure-style gateways, Ollama, llama.cpp
// server, vLLM, LM Studio, OpenRouter, ...), a client of its own on
// net/http (no SDK): wire.go has the JSON it sends and reads.
//
// A Model sends each model.Request as one streaming request (`stream: true`,
// `stream_options: {include_usage: true}`) and yields:
//
//   - ChunkThinking for the reasoning text that local servers put in the
//     `reasoning_content` or `reasoning` field of a delta;
//   - ChunkText for `content` (and `refusal`) deltas;
//   - ChunkToolCall for the indexed `tool_calls` deltas, several per turn:
//     the first delta of a call carries its id and name, later ones append
//     to its arguments; Index is the call's position in the response;
//   - one ChunkUsage from the final usage chunk (prompt, completion, cached
//     and reasoning tokens) when the server reports usage;
//   - one ChunkFinish with the finish_reason normalized to model.Finish*
//     (stop, tool_calls, length; content_filter and refusals: refusal).
//
// Configuration (Config, from the manifest's model keys): the base URL is
// Config.BaseURL, else OPENAI_BASE_URL, else https://api.openai.com/v1; the
// key is Config.APIKey, else the variable named by APIKeyEnv, else
// OPENAI_API_KEY. A server other than api.openai.com may need no key.
//
// Guarantees:
//
//   - A Model is immutable after New, holds no per-run state and is safe for
//     concurrent use by any number of sessions.
//   - Stream stops when ctx is cancelled (the HTTP request is bound to ctx
//     and the error is the context's cause) and when the consumer stops
//     iterating (the response body is closed). It starts no goroutine of
//     its own.
//   - Responses 408, 409, 429 and 5xx and connection errors are retried,
//     at most MaxRetries times (DefaultMaxRetries), with exponential
//     backoff from 0.5s to 8s less up to 25% jitter, honouring
//     Retry-After (seconds or HTTP date) and Retry-After-Ms up to
//     MaxRetryDelay (a longer requested wait is not retried) and the
//     server's X-Should-Retry. Retries happen only before the response
//     streams, so before any chunk is yielded.
//   - An event of the stream above 1 MiB ends it with an error (no
//     unbounded buffering); an error body is read up to 64 KiB.
//   - Failures are an *Error such as `openai: 401 unauthorized: <server
//     message> (...)`. API keys never appear in errors, events or logs:
//     messages are built from the status and the server's message, and the
//     key is redacted from anything the server echoes. Transport errors
//     never show the request URL (it may carry a password or a key in its
//     query).
package openai
