// Package provider holds what the model providers (model/openai,
// model/anthropic) have in common, so that each provider package keeps
// only what its API and SDK make different: request conversion, the
// stream's events, the SDK options and the shape of its error bodies.
//
// It has:
//
//   - Setup, which resolves a provider's configuration (base URL from the
//     config, the environment or a default; API key from the config, a
//     named variable or the provider's variable; retries; HTTP client)
//     into an immutable Endpoint;
//   - Begin, Track and Observe: the per-call state (attempts, last status,
//     error body) that an SDK middleware records through Observe, found
//     in the request's context;
//   - Error, the error of a failed model call, built only by an Endpoint
//     (StatusError, StreamError, CallError, NewError, MissingKey), and
//     ErrorMessage, which finds the message in an error body.
//
// Guarantees:
//
//   - API keys never appear in error text: every Error an Endpoint builds
//     has its text and Message passed through Redact, which removes the
//     key from anything (such as a server that echoes it); texts are made
//     from the status, the server's message and URLs without user info.
//   - Error bodies are bounded: Observe keeps at most MaxErrorBody bytes of
//     an error response (and gives the SDK the same bytes back), and
//     ErrorMessage shortens a body it cannot parse to a few hundred bytes.
//   - An Endpoint is immutable after Setup and safe for concurrent use; a
//     CallState belongs to one call, whose attempts are sequential. Nothing
//     here starts a goroutine.
//
// The package is internal: its API follows the providers' needs.
package provider
