package tracing

import (
	"context"

	"go.opentelemetry.io/otel/trace"
)

// WithRemoteParent returns ctx whose runs' root spans have sc, a caller's
// span in another process, as their parent; ctx itself when sc is not
// valid.
func WithRemoteParent(ctx context.Context, sc trace.SpanContext) context.Context {
	if !sc.IsValid() {
		return ctx
	}
	return trace.ContextWithRemoteSpanContext(ctx, sc)
}
