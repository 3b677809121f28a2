// Package provider holds what the model providers (model/openai,
// model/anthropic) have in common, so that each provider package keeps
// only what its API makes different: the JSON of its requests and events
// (wire.go), request conversion, the meaning of the events and the shape
// of its error bodies.
//
// It has:
//
//   - Setup, which resolves a provider's configuration (base URL from the
//     config, the environment or a default; API key from the config, a
//     named variable or the provider's variable; retries; HTTP client)
//     into an immutable Endpoint;
//   - Begin and Endpoint.Post: a call's request body and its POST, with
//     the retry loop (transport errors, 408, 409, 429, 5xx; Retry-After
//     and Retry-After-Ms up to MaxRetryDelay, a longer wait is not
//     retried; X-Should-Retry; else exponential backoff with jitter),
//     recording each attempt in the call's CallState;
//   - EventReader, a text/event-stream reader with a bound per event;
//   - Error, the error of a failed model call, built only by an Endpoint
//     (Fail, StatusError, StreamError, CallError, NewError, MissingKey),
//     and ErrorMessage, which finds the message in an error body.
//
// Guarantees:
//
//   - API keys never appear in error text: every Error an Endpoint builds
//     has its text and Message passed through Redact, which removes the
//     key from anything (such as a server that echoes it); texts are made
//     from the status, the server's message and URLs without user info.
//     Transport errors are stripped of the request URL, which may carry
//     a password or a key in its query.
//   - Retries happen only before any of the answer is read: Post returns
//     a 2xx response unread, and a stream that breaks is never retried.
//   - Memory is bounded: an error body is read up to MaxErrorBody bytes,
//     an event of a stream (and any line) up to MaxEvent bytes (a longer
//     one is ErrEventTooLong, at once), and ErrorMessage's result is
//     shortened to a few hundred bytes.
//   - An Endpoint is immutable after Setup and safe for concurrent use; a
//     CallState belongs to one call, whose attempts are sequential. Nothing
//     here starts a goroutine.
//
// The package is internal: its API follows the providers' needs.
package provider
