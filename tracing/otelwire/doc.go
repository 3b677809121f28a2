// Package otelwire makes the OpenTelemetry SDK's tracer and meter
// providers that the standard OTEL_* environment variables and a
// manifest's `observability:` block ask for (Setup), with the contrib
// autoexport package, the OTLP exporters (gRPC and HTTP) and Prometheus.
//
// It is the only place agentpool imports the SDK and its exporters, and
// only agentpool-full imports it (through cmd/agentpool-full), so
// agentpool-light neither links nor initialises them. The pool and its
// observer (tracing) take any trace.TracerProvider and
// metric.MeterProvider and depend on the OpenTelemetry API alone, so a
// library user who does not trace does not build the exporters, gRPC or
// protobuf. What to export is decided by tracing.Export, which both
// binaries share.
package otelwire
