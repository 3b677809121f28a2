//go:build !race

package acp

// raceEnabled: see race_on_test.go.
const raceEnabled = false
