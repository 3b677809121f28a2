//go:build race

package durable

// raceEnabled: this test binary runs under the race detector, and so does
// the CLI it builds (a link of the packages `go test -race` compiled).
const raceEnabled = true
