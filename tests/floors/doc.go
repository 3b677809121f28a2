// Package floors holds the tests that keep agentpool's core small: the
// packages a library user imports first (pool, agent, spawn, session,
// hook, event, tool, config) depend on the standard library, the YAML
// parser, the OpenTelemetry API and small helpers only. Provider clients,
// HTTP fetching, MCP, the OpenTelemetry SDK and exporters, gRPC, Temporal
// and the SQL drivers are wired in from outside (package batteries, the
// command, the servers), never imported by the core.
//
// The shape tests (shape_test.go) read the module's non-test sources with
// go/parser: no type has more than 30 methods (those that had more when
// the test was written may not grow), and a mutex in a struct with more
// than one map says, in a comment, what it guards and why one lock.
//
// The tests run `go list`, so they need the go command; they fail, not
// skip, when a core package crosses its floor, naming what pulled in the
// package that should not be there.
package floors
