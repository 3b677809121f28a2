package acpagent_test

import (
	"context"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/external/acpagent"
	"github.com/agentpool/agentpool/internal/proctree/proctreetest"
)

// gone fails the test unless process pid has exited already (a zombie
// not yet reaped by its new parent counts).
func gone(t *testing.T, pid int, what string) {
	t.Helper()
	if !proctreetest.WaitExit(pid, time.Millisecond) {
		t.Errorf("%s (pid %d) outlived the run", what, pid)
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// An agent that never answers its prompt, nor session/cancel, with no
// spawn timeout: the delegation waits until the run is cancelled; then
// session/cancel, CancelGrace, and the agent is killed. The child ends
// aborted saying so, the parent goes on, and no agent process is left
// when the run returns.
func TestHungAgentIsKilledOnCancel(t *testing.T) {
	node := testAgentNode(t, acpagent.Config{CancelGrace: 300 * time.Millisecond})
	p, _ := testPool(t, nil, node, parentNode{name: "parent", child: node, times: 1})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pid := 0
	res, evs := run(t, ctx, p, "parent", "hang", func(e event.Event) {
		if s, ok := e.(event.Subagent); ok {
			if d, ok := s.Event.(event.PartDelta); ok && strings.HasPrefix(d.Delta.ContentDelta, "hanging ") {
				pid, _ = strconv.Atoi(strings.TrimPrefix(d.Delta.ContentDelta, "hanging "))
				cancel() // the agent has the prompt and will never answer
			}
		}
	})
	if pid == 0 {
		t.Fatalf("the agent never said it hangs (result %+v)", res.Result)
	}
	var end event.SpawnSessionEnd
	for _, e := range evs {
		if v, ok := e.(event.SpawnSessionEnd); ok {
			end = v
		}
	}
	if end.StopReason != event.StopAborted || !strings.Contains(end.Error, "did not answer session/cancel within 300ms and was killed") {
		t.Errorf("child end %+v", end)
	}
	gone(t, pid, "the hung agent")
}

// An agent that answers but does not exit at the end of its stdin (nor
// on SIGTERM) is killed by the run's end, after CancelGrace.
func TestLingeringAgentIsKilledAtRunEnd(t *testing.T) {
	node := testAgentNode(t, acpagent.Config{CancelGrace: 300 * time.Millisecond})
	p, _ := testPool(t, nil, node)
	res, _ := run(t, context.Background(), p, "tester", "linger", nil)
	if res.Result.StopReason != event.StopCompleted {
		t.Fatalf("result %+v", res.Result)
	}
	gone(t, replyOf(t, res.Result).Pid, "the lingering agent")
}
