package memory_test

import (
	"testing"

	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/session/memory"
	"github.com/agentpool/agentpool/session/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(*testing.T) session.Store { return memory.New() })
}

func TestConformanceUnbounded(t *testing.T) {
	storetest.Run(t, func(*testing.T) session.Store { return memory.New(memory.WithMaxRoots(0)) })
}

// The suite's roots are all running: a store bounded to one root must keep
// every one of them.
func TestConformanceOneRootAllRunning(t *testing.T) {
	storetest.Run(t, func(*testing.T) session.Store { return memory.New(memory.WithMaxRoots(1)) })
}
