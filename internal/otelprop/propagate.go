package otelprop

import (
	"context"
	"net/http"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// traceContext reads and writes W3C traceparent and tracestate.
var traceContext propagation.TraceContext

// FromHeader returns the span context of a request's W3C traceparent (and
// tracestate), invalid when it has none or a malformed one. It costs a
// header lookup when there is none.
func FromHeader(h http.Header) trace.SpanContext {
	if h.Get("Traceparent") == "" {
		return trace.SpanContext{}
	}
	return trace.SpanContextFromContext(traceContext.Extract(context.Background(), propagation.HeaderCarrier(h)))
}

// FromTraceparent is FromHeader for a traceparent (and tracestate) given
// as strings, as in ACP's _meta.
func FromTraceparent(traceparent, tracestate string) trace.SpanContext {
	if traceparent == "" {
		return trace.SpanContext{}
	}
	c := propagation.MapCarrier{"traceparent": traceparent}
	if tracestate != "" {
		c["tracestate"] = tracestate
	}
	return trace.SpanContextFromContext(traceContext.Extract(context.Background(), c))
}

// Propagator is the propagator of trace context across processes: W3C
// trace context (traceparent, tracestate) and baggage. The servers read a
// request's traceparent with it; Setup also installs it as the global one
// (otel.GetTextMapPropagator), which other instrumentation (a Temporal
// worker's interceptor) uses.
func Propagator() propagation.TextMapPropagator {
	return propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})
}
