package otelwire_test

import (
	"context"
	"strings"
	"testing"

	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/tracing/otelwire"
)

// clearEnv unsets every variable Setup reads, for the test.
func clearEnv(t *testing.T) {
	for _, k := range []string{"OTEL_SDK_DISABLED", "OTEL_TRACES_EXPORTER", "OTEL_METRICS_EXPORTER",
		"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
		"OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_HEADERS"} {
		t.Setenv(k, "")
	}
}

func TestSetupNothingWhenUnset(t *testing.T) {
	clearEnv(t)
	cases := map[string]config.Observability{
		"no block":               {},
		"disabled custom":        {Enabled: false, Provider: "custom", Endpoint: "http://127.0.0.1:4318"},
		"hosted provider":        {Enabled: true, Provider: "logfire"},
		"custom without address": {Enabled: true, Provider: "custom"},
	}
	for name, obs := range cases {
		p, err := otelwire.Setup(context.Background(), obs)
		if err != nil || p != nil {
			t.Errorf("%s: Setup = %v, %v; want nothing made", name, p, err)
		}
		if p.TracerProvider() != nil || p.MeterProvider() != nil || p.Shutdown(context.Background()) != nil {
			t.Errorf("%s: a nil *Providers must have no providers and shut down cleanly", name)
		}
	}
}

func TestSetupFromEnvAndManifest(t *testing.T) {
	ctx := context.Background()
	t.Run("console traces only", func(t *testing.T) {
		clearEnv(t)
		t.Setenv("OTEL_TRACES_EXPORTER", "console")
		p, err := otelwire.Setup(ctx, config.Observability{})
		if err != nil {
			t.Fatal(err)
		}
		defer p.Shutdown(ctx)
		if p.TracerProvider() == nil || p.MeterProvider() != nil {
			t.Errorf("traces %v, metrics %v; want traces only", p.TracerProvider(), p.MeterProvider())
		}
	})
	t.Run("none wins over an endpoint", func(t *testing.T) {
		clearEnv(t)
		t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1")
		t.Setenv("OTEL_TRACES_EXPORTER", "none")
		t.Setenv("OTEL_METRICS_EXPORTER", "none")
		if p, err := otelwire.Setup(ctx, config.Observability{}); p != nil || err != nil {
			t.Errorf("Setup = %v, %v; want nothing", p, err)
		}
	})
	t.Run("disabled SDK", func(t *testing.T) {
		clearEnv(t)
		t.Setenv("OTEL_SDK_DISABLED", "true")
		t.Setenv("OTEL_TRACES_EXPORTER", "console")
		if p, err := otelwire.Setup(ctx, config.Observability{}); p != nil || err != nil {
			t.Errorf("Setup = %v, %v; want nothing", p, err)
		}
	})
	t.Run("manifest endpoint", func(t *testing.T) {
		clearEnv(t)
		p, err := otelwire.Setup(ctx, config.Observability{Enabled: true, Provider: "custom", Endpoint: "http://127.0.0.1:1", Headers: map[string]string{"x": "y"}})
		if err != nil {
			t.Fatal(err)
		}
		if p.TracerProvider() == nil || p.MeterProvider() == nil {
			t.Errorf("traces %v, metrics %v; want both", p.TracerProvider(), p.MeterProvider())
		}
		// The metrics reader exports at shutdown, to the manifest's
		// endpoint (nothing listens there).
		if err := p.Shutdown(ctx); err == nil || !strings.Contains(err.Error(), "127.0.0.1:1/v1/metrics") {
			t.Errorf("Shutdown: %v; want a failed export to the manifest's endpoint", err)
		}
	})
	t.Run("unknown exporter", func(t *testing.T) {
		clearEnv(t)
		t.Setenv("OTEL_TRACES_EXPORTER", "carrier-pigeon")
		if p, err := otelwire.Setup(ctx, config.Observability{}); err == nil {
			p.Shutdown(ctx)
			t.Fatal("an unknown exporter must be an error")
		}
	})
}
