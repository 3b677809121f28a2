package shell

import (
	"testing"

	"github.com/agentpool/agentpool/internal/proctree/proctreetest"
)

// As under the CLI, the test process is a subreaper: orphaned
// grandchildren are reparented to it, killed with their tree and reaped
// (an init that does not reap would keep them as zombies that signal 0
// still reaches).
func TestMain(m *testing.M) { proctreetest.VerifyTestMain(m) }
