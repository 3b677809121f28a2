package main

import (
	"testing"

	"go.uber.org/goleak"
)

// The pool's runs start goroutines; none may outlive the example.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The README's program, run as it is: the README shows this output too
// (tests/readme checks that both the program and the output match).
func Example() {
	main()
	// Output:
	// start: researcher as a worker
	// end:   researcher completed
	// answer: The researcher says: Go has goroutines.
}
