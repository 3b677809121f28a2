// Command agentpool runs teams of LLM agents declared in a YAML manifest
// (see internal/cli for the commands). It is the light binary: without the
// Temporal SDK, gRPC and the OpenTelemetry SDK and exporters, so that it
// starts in a few milliseconds. For `worker`, a manifest with execution:
// {engine: temporal}, or telemetry export, it runs agentpool-full in its
// place (cmd/agentpool-full, built next to it by make build).
package main

import (
	"os"

	"github.com/agentpool/agentpool/internal/cli"
)

func main() { os.Exit(cli.Main(cli.Extensions{})) }
