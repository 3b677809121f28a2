package openai

import (
	"context"
	"net/http"

	"github.com/agentpool/agentpool/model/internal/provider"
)

// Error is how a model call failed: an HTTP error status from the server
// (after the retries), a transport failure, an error event in the stream
// or a broken stream. Its fields are StatusCode, Message (the server's
// message or the cause, with the key redacted) and Attempts (1 +
// retries); Type stays empty. Its text never contains the API key.
type Error = provider.Error

// fail turns the error of a call into an *Error (or the context's cause).
func (m *Model) fail(ctx context.Context, st *provider.CallState, err error, streaming bool) error {
	return m.ep.Fail(ctx, st, err, streaming, http.StatusText, func(body []byte) (string, string) {
		return "", errorMessage(body)
	})
}

// errorMessage finds the message in an error body: {"error": {"message"}}
// (OpenAI, vLLM, llama.cpp), {"error": "..."} (Ollama), {"message"} or
// {"detail"}; otherwise the body itself, shortened.
func errorMessage(body []byte) string {
	_, msg := provider.ErrorMessage(body, true)
	return msg
}
