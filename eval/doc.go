// Package eval runs evaluation suites: cases (a prompt for an agent of a
// manifest, with optional files in a fresh workspace) checked by
// assertions (text contains or matches, the answer validates against a
// JSON schema, a tool was called, a child was spawned, cost, tokens and
// time under a bound, a judge agent's verdict), run in parallel, reported
// as a table, JSON and JUnit XML, and compared side by side across two
// manifests (`agentpool eval`, docs/evals.md).
//
// The package knows nothing of how a case runs: the caller gives a Runner
// (the CLI builds a pool per case and run). It guarantees:
//
//   - Suites are bounded (size, cases, assertions, files per case) and a
//     bad one is refused with the file, the line and the field.
//   - Every assertion of every case is evaluated and reported, pass or
//     fail, with the reason; a case whose run failed fails, with the run's
//     error, and its assertions are still reported against what it did.
//   - Results come back in the suite's order whatever the concurrency.
package eval
