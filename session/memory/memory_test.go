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
