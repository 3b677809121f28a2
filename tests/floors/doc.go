// Package floors holds the tests that keep agentpool's core small: the
// packages a library user imports first (pool, agent, spawn, session,
// hook, event, tool, config) depend on the standard library, the YAML
// parser, the OpenTelemetry API and small helpers only. Provider clients,
// HTTP fetching, MCP, the OpenTelemetry SDK and exporters, gRPC, Temporal
// and the SQL drivers are wired in from outside (package batteries, the
// command, the servers), never imported by the core.
//
// The tests run `go list`, so they need the go command; they fail, not
// skip, when a core package crosses its floor, naming what pulled in the
// package that should not be there.
package floors
