package code

import (
	"testing"

	"github.com/agentpool/agentpool/internal/proctree/proctreetest"
)

// The formatters run as process trees: the test process is a subreaper,
// as the CLI is, and no goroutine outlives the tests.
func TestMain(m *testing.M) { proctreetest.VerifyTestMain(m) }
