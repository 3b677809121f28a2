// Package temporaltest is what the tests that start a Temporal dev server
// (durable, cli) share. StartDev starts one on loopback ports and
// starts it again on fresh ports when it exits before it serves (a port
// taken between choosing and binding it); WaitServing waits for the
// server's frontend to say it serves, on the gRPC health service the
// Temporal SDK's CheckHealth asks, instead of dialling again every so often.
//
// It guarantees that WaitServing returns nil only once the frontend
// reported SERVING, and returns at once, with an error, when the server's
// process exits first or ctx ends; and that every server StartDev started
// is killed, with its process group, when the test ends. It is for tests
// only.
package temporaltest
