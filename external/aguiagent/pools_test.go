package aguiagent_test

import (
	"context"
	"iter"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/agentpool/agentpool/batteries"
	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/event/eventtest"
	"github.com/agentpool/agentpool/external/aguiagent"
	"github.com/agentpool/agentpool/model"
	"github.com/agentpool/agentpool/pool"
	"github.com/agentpool/agentpool/server/agui"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/spawn"
)

// remoteYAML is the pool served over AG-UI: planner calls its worker
// summarizer (a tool call in planner's own stream, a subagent below it)
// and answers; waiter waits until cancelled.
const remoteYAML = `
default_agent: planner
agents:
  planner:
    model:
      type: test
      call_tools: [ask_summarizer]
      tool_args:
        ask_summarizer: {prompt: "Summarize."}
      custom_output_text: "Plan complete."
    workers: [summarizer]
  summarizer:
    model: {type: test, custom_output_text: "Summary: goroutines."}
  waiter:
    model: {type: blocking}
`

// localYAML reaches the remote pool's agents as AG-UI members: remote as
// lead's worker, slow directly, gone at a path with no agent.
const localYAML = `
default_agent: lead
agents:
  lead:
    model:
      type: test
      call_tools: [ask_remote, ask_gone]
      tool_args:
        ask_remote: {prompt: "Plan it."}
        ask_gone: {prompt: "Anyone?"}
      custom_output_text: "Lead done."
    workers: [remote, gone]
  remote:
    type: agui
    endpoint: URL/agents/planner
    description: The remote planning pool.
    headers:
      Authorization: Bearer ${AGUI_TEST_TOKEN}
    timeout: 60.0
  slow:
    type: agui
    endpoint: URL/agents/waiter
    headers: {Authorization: "Bearer ${AGUI_TEST_TOKEN}"}
  gone:
    type: agui
    endpoint: URL/agents/nobody
    headers: {Authorization: "Bearer ${AGUI_TEST_TOKEN}"}
`

// blocking is a model that says which session asked it on started, then
// waits for its context to end.
type blocking struct{ started chan<- string }

func (blocking) ID() string { return "blocking" }

func (b blocking) Stream(ctx context.Context, _ *model.Request) iter.Seq2[model.Chunk, error] {
	return func(yield func(model.Chunk, error) bool) {
		if inv := spawn.InvocationFrom(ctx); inv != nil {
			select {
			case b.started <- inv.Session.ID:
			case <-ctx.Done():
			}
		}
		<-ctx.Done()
		yield(model.Chunk{}, context.Cause(ctx))
	}
}

// pools starts the remote pool behind server/agui (with a token) and
// builds the local pool that reaches it, from manifests through
// batteries.
func pools(t *testing.T) (remote, local *pool.Pool, started chan string, ts *httptest.Server) {
	t.Helper()
	opt := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, opt) })
	started = make(chan string, 4)
	rreg := pool.NewRegistry().AddModel("blocking", func(config.ModelSpec) (model.Model, error) { return blocking{started}, nil })
	remote = build(t, remoteYAML, rreg)
	srv := agui.New(remote, agui.Options{Token: "tok3n"})
	ts = httptest.NewServer(srv)
	t.Cleanup(func() { ts.Close(); srv.Close() })
	t.Setenv("AGUI_TEST_TOKEN", "tok3n")
	local = build(t, strings.ReplaceAll(localYAML, "URL", ts.URL), batteries.Registry())
	return remote, local, started, ts
}

func build(t *testing.T, src string, reg *pool.Registry) *pool.Pool {
	t.Helper()
	m, err := config.ParseWith("agentpool.yaml", []byte(src), batteries.ConfigOptions(reg))
	if err != nil {
		t.Fatal(err)
	}
	p, err := pool.New(m, pool.Options{Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// collect is a sink that keeps every event.
type collect struct {
	mu  sync.Mutex
	evs []event.Event
}

func (c *collect) Emit(e event.Event) { c.mu.Lock(); c.evs = append(c.evs, e); c.mu.Unlock() }

// TestPoolCallsPoolOverAGUI: a pool calls another pool's agent over
// AG-UI as a worker: the member's run is a child session holding the
// prompt and the remote's answer, the remote's tool call shows in the
// local stream, and an endpoint with no agent fails its delegation only.
func TestPoolCallsPoolOverAGUI(t *testing.T) {
	remote, local, _, _ := pools(t)
	var sink collect
	res, err := local.RunSink(context.Background(), pool.RunRequest{Prompt: "Go."}, &sink)
	if err != nil {
		t.Fatal(err)
	}
	if res.Result.StopReason != event.StopCompleted || res.Result.Output != "Lead done." {
		t.Fatalf("local run: %s %q %v", res.Result.StopReason, res.Result.Output, res.Result.Err)
	}
	if err := eventtest.CheckInvariants(res.SessionID, sink.evs); err != nil {
		t.Error(err)
	}
	kids, err := local.Store().ListSessions(context.Background(), session.ListOptions{ParentID: res.SessionID})
	if err != nil {
		t.Fatal(err)
	}
	byAgent := map[string]session.Session{}
	for _, s := range kids {
		byAgent[s.AgentName] = s
	}
	rs, ok := byAgent["remote"]
	if !ok || rs.Status != session.StatusCompleted {
		t.Fatalf("remote child: %+v (children %v)", rs, kids)
	}
	msgs, err := local.Store().Messages(context.Background(), rs.ID)
	if err != nil || len(msgs) != 2 || msgs[0].Message.Text() != "Plan it." || msgs[1].Message.Text() != "Plan complete." {
		t.Errorf("remote child %s: messages %v (%v), want the prompt and the remote's answer", rs.ID, msgs, err)
	}
	if g := byAgent["gone"]; g.Status == session.StatusCompleted {
		t.Errorf("gone child: %+v, want failed", g)
	}
	var sawCall, sawResult, sawGone bool
	for _, e := range sink.evs {
		sa, ok := e.(event.Subagent)
		if !ok {
			continue
		}
		switch v := sa.Event.(type) {
		case event.ToolCallStart:
			sawCall = sawCall || (sa.SourceName == "remote" && v.ToolName == "ask_summarizer" && strings.Contains(string(v.RawInput), "Summarize."))
		case event.ToolCallComplete:
			sawResult = sawResult || (sa.SourceName == "remote" && v.ToolName == "ask_summarizer" && strings.Contains(v.ToolResult, "Summary: goroutines.") && !v.IsError)
		case event.RunError:
			sawGone = sawGone || (sa.SourceName == "gone" && strings.Contains(v.Message, "404"))
		}
	}
	if !sawCall || !sawResult {
		t.Errorf("the local stream lacks the remote's tool call: start %v, result %v", sawCall, sawResult)
	}
	if !sawGone {
		t.Error("the failed delegation's run_error does not say 404")
	}
	// The remote pool ran planner and its worker once.
	roots, err := remote.Store().ListSessions(context.Background(), session.ListOptions{RootsOnly: true})
	if err != nil || len(roots) != 1 || roots[0].AgentName != "planner" {
		t.Fatalf("remote roots: %v (%v), want planner's", roots, err)
	}
}

// TestCancelReachesRemote: cancelling the local run ends the request,
// which cancels the remote run: both end aborted.
func TestCancelReachesRemote(t *testing.T) {
	remote, local, started, ts := pools(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan pool.RunResult, 1)
	go func() {
		res, err := local.RunSink(ctx, pool.RunRequest{Node: "slow", Prompt: "wait"}, event.Discard)
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	rsid := <-started
	cancel()
	res := <-done
	if res.Result.StopReason != event.StopAborted {
		t.Errorf("local run: %s, want aborted", res.Result.StopReason)
	}
	ts.Close() // waits for the remote's handler: its run has ended
	s, err := remote.Store().GetSession(context.Background(), rsid)
	if err != nil || s.Status != session.StatusAborted {
		t.Errorf("remote session %s: %+v (%v), want aborted", rsid, s, err)
	}
}

func TestUnsetHeaderVariable(t *testing.T) {
	t.Setenv("AGUI_TEST_TOKEN", "")
	_, err := batteries.AGUI(&config.Agent{Name: "x", External: &config.ExternalAgent{AGUI: &config.AGUIRemote{
		Endpoint: "http://127.0.0.1:1/", Headers: map[string]string{"Authorization": "Bearer ${AGUI_UNSET_VAR}"}}}}, "")
	if err == nil || !strings.Contains(err.Error(), "AGUI_UNSET_VAR") {
		t.Errorf("unset variable: %v", err)
	}
	if _, err := aguiagent.New(aguiagent.Config{Name: "x", Endpoint: "ftp://x"}); err == nil {
		t.Error("ftp endpoint accepted")
	}
}
