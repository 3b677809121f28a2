package durable

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"

	"github.com/agentpool/agentpool/approval"
	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/event/eventtest"
	"github.com/agentpool/agentpool/hook"
	"github.com/agentpool/agentpool/id"
	"github.com/agentpool/agentpool/model/testmodel"
	"github.com/agentpool/agentpool/pool"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/tool"
)

// approvalPool: boss calls rm, whose rule is ask, then answers "done".
func approvalPool(t *testing.T, ran *atomic.Int32) *pool.Pool {
	t.Helper()
	reg := hook.New(hook.Options{})
	t.Cleanup(func() { _ = reg.Close(context.Background()) })
	rm := tool.New("rm", "removes", func(context.Context, tool.Call, noArgs) (tool.Result, error) {
		ran.Add(1)
		return tool.Result{Content: "removed"}, nil
	})
	boss := scripted(t,
		testmodel.Turn{ToolCalls: []testmodel.ToolCall{{Name: "rm", Args: map[string]any{"path": "x"}}}},
		testmodel.Turn{Text: "done"},
	)
	p, err := pool.Build(pool.Config{
		Agents:  []pool.AgentSpec{{Name: "boss", Model: boss, Tools: []tool.Tool{rm}, ToolApproval: map[string]string{"rm": "ask"}}},
		Default: "boss",
	}, pool.Options{Store: nil, Hooks: reg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// runAsking runs boss's workflow with approvals; answer, when set, is
// signalled (with the stored request's id) once the request is stored.
func runAsking(t *testing.T, p *pool.Pool, policy Approvals, answer *ApprovalSignal) (SessionOutput, []event.Event) {
	t.Helper()
	ctx := context.Background()
	var ts testsuite.WorkflowTestSuite
	env := ts.NewTestWorkflowEnvironment()
	env.SetWorkerOptions(worker.Options{DeadlockDetectionTimeout: time.Minute})
	env.SetTestTimeout(2 * time.Minute)
	engineFor(p).Register(env)
	now := time.Now()
	root := session.Session{ID: id.Descending(id.Session), AgentName: "boss", SourceType: event.SourceAgent, Title: "t", Status: session.StatusRunning, CreatedAt: now, UpdatedAt: now}
	if err := p.Store().CreateSession(ctx, root); err != nil {
		t.Fatal(err)
	}
	if answer != nil {
		// Fires once the workflow waits (the test clock skips to it).
		env.RegisterDelayedCallback(func() {
			recs, err := p.Store().Events(ctx, root.ID, 0)
			if err != nil {
				t.Error(err)
				return
			}
			for _, r := range recs {
				if req, ok, _ := approval.ParseRequested(r.Event); ok {
					s := *answer
					s.RequestID = req.ID
					env.SignalWorkflow(SignalApproval, ApprovalSignal{RequestID: "per_unknown", Reply: approval.AllowOnce})
					env.SignalWorkflow(SignalApproval, s)
					return
				}
			}
			t.Error("no approval_requested in the log while the workflow waits")
		}, time.Second)
	}
	env.ExecuteWorkflow(WorkflowName, SessionInput{Session: root, RunID: id.Ascending(id.Run), Prompt: "go", Approvals: &policy})
	if !env.IsWorkflowCompleted() {
		t.Fatal("workflow did not complete")
	}
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	var out SessionOutput
	if err := env.GetWorkflowResult(&out); err != nil {
		t.Fatal(err)
	}
	recs, err := p.Store().Events(ctx, root.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	evs := make([]event.Event, len(recs))
	for i, r := range recs {
		evs[i] = r.Event
	}
	if err := eventtest.CheckInvariants(root.ID, evs); err != nil {
		t.Errorf("invariants: %v", err)
	}
	return out, evs
}

// toolResult is the result of the tool call of name in evs, and the
// stored request and answer.
func approvalTrail(t *testing.T, evs []event.Event, name string) (result string, req approval.Request, ans approval.Answered) {
	t.Helper()
	for _, e := range evs {
		if c, ok := e.(event.ToolCallComplete); ok && c.ToolName == name {
			result = c.ToolResult
		}
		if r, ok, err := approval.ParseRequested(e); ok {
			if err != nil {
				t.Fatal(err)
			}
			req = r
		}
		if a, ok, err := approval.ParseReplied(e); ok {
			if err != nil {
				t.Fatal(err)
			}
			ans = a
		}
	}
	return result, req, ans
}

// Under the engine with approvals, an ask waits in the workflow for its
// signal: allowed, the tool runs; rejected, the model sees the person's
// words; unanswered, the timeout (a workflow timer) rejects. The request
// and its answer are in the session's log.
func TestWorkflowWaitsForTheApproval(t *testing.T) {
	t.Run("allow", func(t *testing.T) {
		var ran atomic.Int32
		out, evs := runAsking(t, approvalPool(t, &ran), Approvals{}, &ApprovalSignal{Reply: approval.AllowOnce, By: "test"})
		result, req, ans := approvalTrail(t, evs, "rm")
		if out.Output != "done" || ran.Load() != 1 || result != "removed" {
			t.Fatalf("end %+v, ran %d, result %q", out, ran.Load(), result)
		}
		if req.Tool != "rm" || req.Agent != "boss" || req.Title != "rm x" || !strings.Contains(req.Rule, "tool_approval") || req.CallID == "" {
			t.Errorf("stored request %+v", req)
		}
		if ans.RequestID != req.ID || ans.Reply != approval.AllowOnce || ans.By != "test" {
			t.Errorf("stored answer %+v of %s", ans, req.ID)
		}
	})
	t.Run("reject", func(t *testing.T) {
		var ran atomic.Int32
		_, evs := runAsking(t, approvalPool(t, &ran), Approvals{}, &ApprovalSignal{Reply: approval.RejectOnce, Message: "not now", By: "test"})
		result, _, ans := approvalTrail(t, evs, "rm")
		if ran.Load() != 0 || !strings.Contains(result, "approval rejected: rejected by the user in test: not now") {
			t.Fatalf("ran %d, result %q", ran.Load(), result)
		}
		if ans.Reply != approval.RejectOnce || ans.Message != "not now" {
			t.Errorf("stored answer %+v", ans)
		}
	})
	t.Run("timeout", func(t *testing.T) {
		var ran atomic.Int32
		_, evs := runAsking(t, approvalPool(t, &ran), Approvals{Timeout: time.Hour}, nil)
		result, _, ans := approvalTrail(t, evs, "rm")
		if ran.Load() != 0 || !strings.Contains(result, "nobody answered within 1h0m0s") {
			t.Fatalf("ran %d, result %q", ran.Load(), result)
		}
		if ans.By != approval.ByTimeout || ans.Reply != approval.RejectOnce {
			t.Errorf("stored answer %+v", ans)
		}
	})
}
