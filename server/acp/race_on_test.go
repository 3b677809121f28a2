//go:build race

package acp

// raceEnabled: the race detector slows JSON and text handling by more
// than ten times, so tests of very large messages use smaller ones.
const raceEnabled = true
