package otelwire

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"go.opentelemetry.io/contrib/exporters/autoexport"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/internal/otelprop"
	"github.com/agentpool/agentpool/tracing"
)

// Providers are the SDK's tracer and meter providers that Setup made.
// Shut them down when the process ends (that flushes what is buffered).
type Providers struct {
	tp *sdktrace.TracerProvider // nil: no traces
	mp *sdkmetric.MeterProvider // nil: no metrics
}

// TracerProvider is the tracer provider, nil when traces are not exported
// (a nil *Providers has none).
func (p *Providers) TracerProvider() trace.TracerProvider {
	if p == nil || p.tp == nil {
		return nil
	}
	return p.tp
}

// MeterProvider is the meter provider, nil when metrics are not exported.
func (p *Providers) MeterProvider() metric.MeterProvider {
	if p == nil || p.mp == nil {
		return nil
	}
	return p.mp
}

// Shutdown flushes and stops the providers; a nil *Providers has nothing
// to do.
func (p *Providers) Shutdown(ctx context.Context) error {
	if p == nil {
		return nil
	}
	var errs []error
	if p.tp != nil {
		errs = append(errs, p.tp.Shutdown(ctx))
	}
	if p.mp != nil {
		errs = append(errs, p.mp.Shutdown(ctx))
	}
	return errors.Join(errs...)
}

// Setup makes the providers that the standard OpenTelemetry environment
// variables and the manifest's observability block ask for, and installs
// them as the global ones (with otelprop.Propagator). It returns nil,
// having made nothing, when nothing asks for export (tracing.Export, the
// rule agentpool-light also applies to decide that it needs
// agentpool-full).
//
// Traces are exported when OTEL_TRACES_EXPORTER is set (otlp, console;
// none turns them off), or when it is unset and an OTLP endpoint is given,
// by OTEL_EXPORTER_OTLP_ENDPOINT / OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or
// by the manifest (a `custom` provider's endpoint and headers). Metrics
// likewise with OTEL_METRICS_EXPORTER (otlp, console, prometheus) and
// OTEL_EXPORTER_OTLP_METRICS_ENDPOINT. The environment wins over the
// manifest: an endpoint, headers or exporter set in the environment is
// used as set, and the manifest fills only what it leaves unset.
// OTEL_SDK_DISABLED=true turns everything off. The rest (protocol,
// timeouts, OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES, sampling) is read
// by the SDK and its exporters as the specification says.
func Setup(ctx context.Context, obs config.Observability) (*Providers, error) {
	tracesOn, metricsOn := tracing.Export(obs, os.LookupEnv)
	man := manifestExport(obs)
	if !tracesOn && !metricsOn {
		return nil, nil
	}
	res, err := resource.Merge(resource.Default(), resource.Environment())
	if err != nil {
		res = resource.Default() // a malformed OTEL_RESOURCE_ATTRIBUTES: still export
	}
	if os.Getenv("OTEL_SERVICE_NAME") == "" && !strings.Contains(os.Getenv("OTEL_RESOURCE_ATTRIBUTES"), "service.name=") {
		if r, err := resource.Merge(res, resource.NewSchemaless(serviceName("agentpool"))); err == nil {
			res = r
		}
	}
	p := &Providers{}
	if tracesOn {
		var opts []autoexport.SpanOption
		if man != nil && !envSet("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") {
			opts = append(opts, autoexport.WithFallbackSpanExporter(man.spanExporter))
		}
		exp, err := autoexport.NewSpanExporter(ctx, opts...)
		if err != nil {
			return nil, fmt.Errorf("traces exporter (OTEL_TRACES_EXPORTER=%q): %w", os.Getenv("OTEL_TRACES_EXPORTER"), err)
		}
		p.tp = sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	}
	if metricsOn {
		var opts []autoexport.MetricOption
		if man != nil && !envSet("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT") {
			opts = append(opts, autoexport.WithFallbackMetricReader(man.metricReader))
		}
		r, err := autoexport.NewMetricReader(ctx, opts...)
		if err != nil {
			p.Shutdown(ctx)
			return nil, fmt.Errorf("metrics exporter (OTEL_METRICS_EXPORTER=%q): %w", os.Getenv("OTEL_METRICS_EXPORTER"), err)
		}
		p.mp = sdkmetric.NewMeterProvider(sdkmetric.WithReader(r), sdkmetric.WithResource(res))
	}
	if p.tp != nil {
		otel.SetTracerProvider(p.tp)
	}
	if p.mp != nil {
		otel.SetMeterProvider(p.mp)
	}
	otel.SetTextMapPropagator(otelprop.Propagator())
	return p, nil
}

func envSet(names ...string) bool {
	for _, n := range names {
		if strings.TrimSpace(os.Getenv(n)) != "" {
			return true
		}
	}
	return false
}

// manifestOTLP is what a manifest's observability block says about OTLP
// export: AgentPool's `custom` provider, an endpoint with headers and an
// optional protocol (grpc or http/protobuf, the default).
type manifestOTLP struct {
	endpoint string
	headers  map[string]string
	grpc     bool
}

// manifestExport returns the OTLP export the block asks for, nil when it
// asks for none (disabled, no block, or a hosted provider agentpool does
// not export to: logfire, langsmith, agentops, arize).
func manifestExport(o config.Observability) *manifestOTLP {
	if !tracing.ManifestExports(o) {
		return nil
	}
	m := &manifestOTLP{endpoint: o.Endpoint, headers: o.Headers}
	if p, _ := o.Settings["protocol"].(string); p == "grpc" {
		m.grpc = true
	}
	if v := os.Getenv("OTEL_EXPORTER_OTLP_PROTOCOL"); v != "" {
		m.grpc = v == "grpc"
	}
	return m
}

// headersFromEnv says whether the environment gives the OTLP headers (then
// the manifest's are not used).
func headersFromEnv(signal string) bool {
	return envSet("OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_"+signal+"_HEADERS")
}

func (m *manifestOTLP) spanExporter(ctx context.Context) (sdktrace.SpanExporter, error) {
	if m.grpc {
		opts := []otlptracegrpc.Option{otlptracegrpc.WithEndpointURL(m.endpoint)}
		if len(m.headers) > 0 && !headersFromEnv("TRACES") {
			opts = append(opts, otlptracegrpc.WithHeaders(m.headers))
		}
		return otlptracegrpc.New(ctx, opts...)
	}
	opts := []otlptracehttp.Option{otlptracehttp.WithEndpointURL(strings.TrimRight(m.endpoint, "/") + "/v1/traces")}
	if len(m.headers) > 0 && !headersFromEnv("TRACES") {
		opts = append(opts, otlptracehttp.WithHeaders(m.headers))
	}
	return otlptracehttp.New(ctx, opts...)
}

func (m *manifestOTLP) metricReader(ctx context.Context) (sdkmetric.Reader, error) {
	var exp sdkmetric.Exporter
	var err error
	if m.grpc {
		opts := []otlpmetricgrpc.Option{otlpmetricgrpc.WithEndpointURL(m.endpoint)}
		if len(m.headers) > 0 && !headersFromEnv("METRICS") {
			opts = append(opts, otlpmetricgrpc.WithHeaders(m.headers))
		}
		exp, err = otlpmetricgrpc.New(ctx, opts...)
	} else {
		opts := []otlpmetrichttp.Option{otlpmetrichttp.WithEndpointURL(strings.TrimRight(m.endpoint, "/") + "/v1/metrics")}
		if len(m.headers) > 0 && !headersFromEnv("METRICS") {
			opts = append(opts, otlpmetrichttp.WithHeaders(m.headers))
		}
		exp, err = otlpmetrichttp.New(ctx, opts...)
	}
	if err != nil {
		return nil, err
	}
	return sdkmetric.NewPeriodicReader(exp), nil
}
