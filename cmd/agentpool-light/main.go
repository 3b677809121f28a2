// Command agentpool-light is the agentpool command line (cli):
// every command, without the Temporal SDK, gRPC and the OpenTelemetry SDK
// and exporters. The front binary agentpool runs it in its own place for
// every command but `version` and the top-level help; it can also be run
// directly (`go run ./cmd/agentpool-light run PROMPT` from a checkout). For
// `worker`, a manifest with execution: {engine: temporal}, or telemetry
// export, it runs agentpool-full in its place (cmd/agentpool-full, built
// next to it by make build).
package main

import (
	"os"

	"github.com/agentpool/agentpool/cli"
)

func main() { os.Exit(cli.Main(cli.Extensions{})) }
