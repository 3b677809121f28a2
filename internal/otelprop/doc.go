// Package otelprop carries a run's trace across processes: it reads a
// caller's W3C traceparent (and tracestate) from an HTTP request or from
// strings (ACP's _meta), and is the propagator (trace context and baggage)
// that Setup installs and the Temporal interceptor uses.
//
// It depends on the OpenTelemetry API only (no SDK, no exporter), so that
// the protocol servers can read traceparent without pulling in what
// tracing/otelwire wires up for the command.
package otelprop
