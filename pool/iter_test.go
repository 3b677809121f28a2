package pool_test

import (
	"context"
	"testing"

	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/pool"
	"github.com/agentpool/agentpool/session"
)

const slowNested = `
default_agent: boss
agents:
  boss:
    model:
      type: test
      call_tools: [task]
      tool_args: {task: {agent_or_team: crew, prompt: "work"}}
      custom_output_text: done
    tools: [{type: subagent}]
  slow:
    model: {type: scripted, delay: 5ms, turns: [{text: "one two three four five six seven eight nine ten"}]}
teams:
  crew: {mode: parallel, members: [slow, slow]}
`

// Breaking out of the iterator early cancels the run and waits for it: no
// goroutine is left (TestMain checks), every session is finalized.
func TestRunIteratorEarlyStop(t *testing.T) {
	m, err := config.Parse("slow.yaml", []byte(slowNested))
	if err != nil {
		t.Fatal(err)
	}
	p, err := pool.New(m, pool.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var root string
	n := 0
	for e, err := range p.Run(context.Background(), pool.RunRequest{Prompt: "go"}) {
		if err != nil {
			t.Fatal(err)
		}
		if rs, ok := e.(event.RunStarted); ok && root == "" {
			root = rs.SessionID
		}
		if n++; n == 12 {
			break
		}
	}
	sessions, err := p.Store().ListSessions(context.Background(), session.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(sessions) < 2 {
		t.Fatalf("expected the root and some children, got %d sessions", len(sessions))
	}
	for _, s := range sessions {
		if s.Status == session.StatusRunning {
			t.Errorf("session %s (%s) still running after the iterator stopped", s.ID, s.AgentName)
		}
	}
	rs, _ := p.Store().GetSession(context.Background(), root)
	if rs.Status != session.StatusAborted {
		t.Errorf("root status %s, want aborted", rs.Status)
	}
}

// A run that cannot start yields its error last.
func TestRunIteratorSetupError(t *testing.T) {
	m, _ := config.Parse("slow.yaml", []byte(slowNested))
	p, _ := pool.New(m, pool.Options{})
	var gotErr error
	for e, err := range p.Run(context.Background(), pool.RunRequest{Node: "nobody", Prompt: "go"}) {
		if e != nil {
			t.Fatalf("event from a run that could not start: %v", e.Kind())
		}
		gotErr = err
	}
	if gotErr == nil {
		t.Fatal("no error for an unknown node")
	}
}
