// Package temporaltest is what the tests that start a Temporal dev server
// (durable, cmd/agentpool) share: WaitServing waits for the server's
// frontend to say it serves, on the gRPC health service the Temporal SDK's
// CheckHealth asks, instead of dialling again every so often.
//
// It guarantees that WaitServing returns nil only once the frontend
// reported SERVING, and returns at once, with an error, when the server's
// process exits first or ctx ends. It is for tests only.
package temporaltest
