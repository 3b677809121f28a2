package otelwire

import "go.opentelemetry.io/otel/attribute"

// serviceName is the service.name resource attribute (the default when
// OTEL_SERVICE_NAME does not name one: "agentpool", rather than the SDK's
// "unknown_service:<binary>").
func serviceName(name string) attribute.KeyValue {
	return attribute.String("service.name", name)
}
