package bench

import (
	"context"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/agentpool/agentpool/pool"
)

// BenchmarkDelegatedCallTraced is BenchmarkDelegatedCall (memory store)
// with OpenTelemetry on: the SDK's tracer provider with its batching span
// processor, as `agentpool run` installs it, exporting to a no-op exporter
// (what a run costs in-process, without the network); "+metrics" adds the
// SDK's meter provider with a manual reader. BenchmarkDelegatedCall is the
// same call with tracing off (no provider: nothing is instrumented).
func BenchmarkDelegatedCallTraced(b *testing.B) {
	for _, withMetrics := range []bool{false, true} {
		name := "spans"
		if withMetrics {
			name = "spans+metrics"
		}
		b.Run(name, func(b *testing.B) {
			tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()))
			b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
			opts := pool.Options{Store: openStore(b, "memory"), TracerProvider: tp}
			if withMetrics {
				mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
				b.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
				opts.MeterProvider = mp
			}
			d, err := NewDelegatedWith(opts)
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			if err := d.Run(ctx); err != nil { // warm up
				b.Fatal(err)
			}
			d.Sink.Reset()
			b.ReportAllocs()
			cpu := CPUTime()
			for b.Loop() {
				if err := d.Run(ctx); err != nil {
					b.Fatal(err)
				}
			}
			reportCPU(b, CPUTime()-cpu)
		})
	}
}
