package openai

import (
	"context"
	"errors"
	"net/http"

	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"

	"github.com/agentpool/agentpool/model/internal/provider"
)

// Error is how a model call failed: an HTTP error status from the server
// (after the retries), a transport failure, an error event in the stream
// or a broken stream. Its fields are StatusCode, Message (the server's
// message or the cause, with the key redacted) and Attempts (1 + retries);
// Type stays empty. Its text never contains the API key.
type Error = provider.Error

// observe counts attempts and keeps the body of an error response, which
// the SDK only parses when it has the OpenAI shape.
func observe(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
	res, err := next(req)
	provider.Observe(req, res)
	return res, err
}

// wrap turns an error of the SDK into an *Error (or the context's cause).
func (m *Model) wrap(ctx context.Context, st *provider.CallState, err error, streaming bool) error {
	if cause := context.Cause(ctx); cause != nil {
		return cause
	}
	if st.Status >= 400 {
		return m.ep.StatusError(st, http.StatusText(st.Status), errorMessage(st.Body), err)
	}
	var se *ssestream.StreamError
	if errors.As(err, &se) {
		msg := errorMessage(se.Event.Data)
		if msg == "" {
			msg = se.Message
		}
		return m.ep.StreamError(st, msg, err)
	}
	return m.ep.CallError(st, err, streaming)
}

// errorMessage finds the message in an error body: {"error": {"message"}}
// (OpenAI, vLLM, llama.cpp), {"error": "..."} (Ollama), {"message"} or
// {"detail"}; otherwise the body itself, shortened.
func errorMessage(body []byte) string {
	_, msg := provider.ErrorMessage(body, true)
	return msg
}
