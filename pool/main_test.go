package pool_test

import (
	"testing"

	"go.uber.org/goleak"
)

// Runs start goroutines (the Run iterator, parallel tools, async children,
// team members): none may outlive the tests.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
