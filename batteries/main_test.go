package batteries

import (
	"testing"

	"go.uber.org/goleak"
)

// The example runs a pool: none of its goroutines may outlive the tests.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
