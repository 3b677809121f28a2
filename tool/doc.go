// Package tool defines the Tool interface that agents call, typed function
// tools whose JSON schema comes from a Go argument struct, and helpers to
// run a call safely.
//
// A tool's failure is a result, not a crash: Run converts a returned error,
// or a panic inside the tool, into an error Result that goes back to the
// model, so the run carries on. Tools must be safe for concurrent use: the
// agent loop runs the calls of one model response concurrently, and one
// agent may serve several sessions at once.
package tool

//go:generate go run ../internal/gentools -o ../docs/tool-reference.md
