// Package servertest is the one test harness of the protocol servers
// (server/acp, server/agui, server/opencode, server/web): what their tests
// share to set up a pool, fail its store, check for leaked goroutines,
// serve a handler on loopback, make HTTP requests and wait for a run's end.
//
// It guarantees that whatever it starts ends with the test: pools are
// closed and servers shut down by cleanups (a server's Close waits for its
// handlers, so a test that closes it early knows every request, and the
// run a request drove, has returned). It never sleeps: waits block on a
// notice (a hook's call, a channel) and fail the test after a generous
// bound, which is only the failure path.
//
// It is for tests only; nothing outside _test.go files imports it.
package servertest
