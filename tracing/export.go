package tracing

import (
	"strings"

	"github.com/agentpool/agentpool/config"
)

// Export says which signals are to be exported: what the standard OTEL_*
// environment variables (read with lookup, os.LookupEnv in a program) and
// the manifest's observability block ask for. It is the rule
// tracing/otelwire.Setup applies, kept here, without the SDK, so that the
// light binary, agentpool-light, can tell whether a command needs agentpool-full
// (the binary with the exporters) before it runs.
//
// OTEL_SDK_DISABLED=true turns both off. Otherwise a signal is exported
// when its exporter variable (OTEL_TRACES_EXPORTER, OTEL_METRICS_EXPORTER)
// names one other than none, or when that variable is unset and an OTLP
// endpoint is given, by the environment (OTEL_EXPORTER_OTLP_ENDPOINT or
// the signal's own endpoint variable) or by the manifest (ManifestExports).
func Export(obs config.Observability, lookup func(string) (string, bool)) (traces, metrics bool) {
	get := func(k string) string { v, _ := lookup(k); return strings.TrimSpace(v) }
	if strings.EqualFold(get("OTEL_SDK_DISABLED"), "true") {
		return false, false
	}
	man := ManifestExports(obs)
	wants := func(exporterVar string, endpointVars ...string) bool {
		if v := get(exporterVar); v != "" {
			return !strings.EqualFold(v, "none")
		}
		if man {
			return true
		}
		for _, n := range endpointVars {
			if get(n) != "" {
				return true
			}
		}
		return false
	}
	traces = wants("OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
	metrics = wants("OTEL_METRICS_EXPORTER", "OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT")
	return traces, metrics
}

// ManifestExports says whether the manifest's observability block asks for
// OTLP export: AgentPool's `custom` provider with an endpoint. A disabled
// block, no block, or a hosted provider agentpool does not export to
// (logfire, langsmith, agentops, arize) asks for none.
func ManifestExports(o config.Observability) bool {
	return o.Enabled && o.Provider == "custom" && o.Endpoint != ""
}
