// Package otelwire makes the OpenTelemetry SDK's tracer and meter providers
// with their exporters (OTLP over HTTP or gRPC, console, Prometheus, through
// the contrib autoexport package) from the standard OTEL_* environment and
// a manifest's observability block: Setup. It is the only package of the
// module that links the SDK and the exporters, and only agentpool-full
// imports it (through cmd/agentpool-full), so the light agentpool binary
// neither links nor initialises them. What to export is decided by
// otelpool.Export, which both binaries share; the spans and metrics
// themselves are made by package otelpool against the OpenTelemetry API.
package otelwire
