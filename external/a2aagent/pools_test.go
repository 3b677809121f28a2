package a2aagent_test

import (
	"context"
	"iter"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/agentpool/agentpool/batteries"
	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/external/a2aagent"
	"github.com/agentpool/agentpool/model"
	"github.com/agentpool/agentpool/pool"
	a2asrv "github.com/agentpool/agentpool/server/a2a"
	"github.com/agentpool/agentpool/server/a2a/a2atest"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/spawn"
)

// remoteYAML is the pool served over A2A: planner -> task -> parallel
// team -> searcher -> worker summarizer, critic beside searcher; waiter
// waits until cancelled.
const remoteYAML = `
default_agent: planner
agents:
  planner:
    description: Splits the job and hands it out.
    model:
      type: test
      call_tools: [task]
      tool_args:
        task: {agent_or_team: research_team, prompt: "Collect facts.", description: "Research"}
      custom_output_text: "Plan complete."
    tools: [{type: subagent}]
  searcher:
    model:
      type: test
      call_tools: [ask_summarizer]
      tool_args:
        ask_summarizer: {prompt: "Summarize."}
      custom_output_text: "Search finished."
    workers: [summarizer]
  summarizer:
    model: {type: test, custom_output_text: "Summary: goroutines."}
  critic:
    model: {type: scripted, turns: [{text: "Looks right."}]}
  waiter:
    model: {type: blocking}
  broken:
    model: {type: scripted, turns: [{text: "partial ", error: "upstream exploded"}]}
teams:
  research_team:
    mode: parallel
    members: [searcher, critic]
`

// localYAML calls the remote pool's planner as a team member (through
// the task tool), as a worker and directly; URL is replaced by the
// server's.
const localYAML = `
default_agent: lead
agents:
  lead:
    model:
      type: test
      call_tools: [task, ask_remote]
      tool_args:
        task: {agent_or_team: crew, prompt: "Research goroutines.", description: "crew"}
        ask_remote: {prompt: "Plan it again."}
      custom_output_text: "Lead done."
    tools: [{type: subagent}]
    workers: [remote]
  remote:
    type: a2a
    url: URL/agents/planner
    description: The remote planning pool.
    auth_env: A2A_TEST_TOKEN
  slow:
    type: a2a
    url: URL/agents/waiter
    auth_env: A2A_TEST_TOKEN
  broken_remote:
    type: a2a
    url: URL/agents/broken
    auth_env: A2A_TEST_TOKEN
  nowhere:
    type: a2a
    url: http://127.0.0.1:1/agents/none
  local_critic:
    model: {type: scripted, turns: [{text: "Checked."}]}
  fallible:
    model:
      type: scripted
      turns:
        - tool_calls: [{name: task, args: {agent_or_team: broken_remote, prompt: "try", description: "try"}}]
        - text: "went on"
    tools: [{type: subagent}]
teams:
  crew:
    mode: parallel
    members: [remote, local_critic]
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

// pools starts the remote pool behind server/a2a (with a token) and
// builds the local pool that reaches it, from manifests through
// batteries.
func pools(t *testing.T) (remote, local *pool.Pool, started chan string) {
	t.Helper()
	opt := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, opt) })
	started = make(chan string, 4)
	rreg := pool.NewRegistry().AddModel("blocking", func(config.ModelSpec) (model.Model, error) { return blocking{started}, nil })
	remote = build(t, remoteYAML, rreg)
	srv := a2asrv.New(remote, a2asrv.Options{Token: "tok3n"})
	ts := httptest.NewServer(srv)
	t.Cleanup(func() { ts.Close(); srv.Close() })
	t.Setenv("A2A_TEST_TOKEN", "tok3n")
	local = build(t, strings.ReplaceAll(localYAML, "URL", ts.URL), batteries.Registry())
	return remote, local, started
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

// TestPoolCallsPoolOverA2A: a pool calls another pool's agent over A2A
// as a team member and as a worker; both pools' stores have the whole
// tree of the work, and the local stream shows the remote delegations.
func TestPoolCallsPoolOverA2A(t *testing.T) {
	remote, local, _ := pools(t)
	var sink collect
	res, err := local.RunSink(context.Background(), pool.RunRequest{Prompt: "Go."}, &sink)
	if err != nil {
		t.Fatal(err)
	}
	if res.Result.StopReason != event.StopCompleted {
		t.Fatalf("local run: %s %v", res.Result.StopReason, res.Result.Err)
	}
	all := a2atest.CheckTree(t, local.Store(), res.SessionID, "lead", "crew", "remote", "local_critic")
	var members []session.Session
	for _, s := range all {
		if s.AgentName == "remote" {
			members = append(members, s)
		}
	}
	if len(members) != 2 {
		t.Fatalf("the local tree has %d sessions of remote, want 2 (team member and worker)", len(members))
	}
	ctxs := map[string]bool{}
	for _, s := range members {
		msgs, err := local.Store().Messages(context.Background(), s.ID)
		if err != nil || len(msgs) != 2 || !strings.Contains(msgs[1].Message.Text(), "Plan complete.") {
			t.Errorf("remote member session %s: messages %v (%v), want the prompt and the remote's answer", s.ID, msgs, err)
		}
		if s.Usage.InputTokens == 0 || s.Usage.OutputTokens == 0 {
			t.Errorf("remote member session %s: usage %+v, want the remote tree's tokens", s.ID, s.Usage)
		}
		c, _ := s.Metadata[a2aagent.MetaContextID].(string)
		if c == "" || s.Metadata[a2aagent.MetaTaskID] == "" {
			t.Errorf("remote member session %s: metadata %v", s.ID, s.Metadata)
		}
		ctxs[c] = true
	}
	// The remote's answer streamed, and its delegations showed, in the
	// local stream.
	seen := map[string]bool{}
	var streamed strings.Builder
	for _, e := range sink.evs {
		if sa, ok := e.(event.Subagent); ok && sa.SourceName == "remote" {
			switch v := sa.Event.(type) {
			case event.Custom:
				if v.EventType == a2aagent.EventArtifact {
					seen[v.EventData["name"].(string)] = true
				}
			case event.PartDelta:
				streamed.WriteString(v.Delta.ContentDelta)
			}
		}
	}
	if !strings.Contains(streamed.String(), "Plan complete.") {
		t.Errorf("the remote's answer did not stream as text deltas: %q", streamed.String())
	}
	for _, want := range []string{"research_team", "searcher", "critic", "summarizer"} {
		if !seen[want] {
			t.Errorf("the local stream shows no artifact of the remote's %s; it shows %v", want, seen)
		}
	}
	// The remote pool has one tree per delegation, each the whole work.
	roots, err := remote.Store().ListSessions(context.Background(), session.ListOptions{RootsOnly: true})
	if err != nil || len(roots) != 2 {
		t.Fatalf("remote roots: %d (%v), want 2", len(roots), err)
	}
	for _, r := range roots {
		a2atest.CheckTree(t, remote.Store(), r.ID, "planner", "research_team", "searcher", "critic", "summarizer")
	}
	if len(ctxs) != 2 {
		t.Errorf("the two delegations used contexts %v, want two", ctxs)
	}
}

// TestCancelReachesRemote: cancelling the local run cancels the remote
// task: both sessions end aborted.
func TestCancelReachesRemote(t *testing.T) {
	remote, local, started := pools(t)
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
	s := a2atest.Session(t, remote.Store(), rsid)
	if s.Status != session.StatusAborted {
		t.Errorf("remote session %s: %s, want aborted", rsid, s.Status)
	}
}

// TestRemoteFailure: a remote task that fails, and an agent that is not
// there, fail their delegation with the reason; the parent goes on. An
// unset auth_env is an error when the pool is built.
func TestRemoteFailure(t *testing.T) {
	_, local, _ := pools(t)
	res, err := local.RunSink(context.Background(), pool.RunRequest{Node: "fallible", Prompt: "Go."}, event.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if res.Result.StopReason != event.StopCompleted || res.Result.Output != "went on" {
		t.Errorf("the parent: %s %q, want completed, went on", res.Result.StopReason, res.Result.Output)
	}
	kids, err := local.Store().ListSessions(context.Background(), session.ListOptions{ParentID: res.SessionID})
	if err != nil || len(kids) != 1 {
		t.Fatalf("children %v (%v)", kids, err)
	}
	recs, err := local.Store().Events(context.Background(), kids[0].ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	var why string
	for _, r := range recs {
		if re, ok := r.Event.(event.RunError); ok {
			why = re.Message
		}
	}
	if k := kids[0]; k.Status != session.StatusError || !strings.Contains(why, "upstream exploded") || !strings.Contains(why, "ended failed") {
		t.Errorf("broken_remote's session: %s %q, want error with the remote's reason", k.Status, why)
	}

	res, err = local.RunSink(context.Background(), pool.RunRequest{Node: "nowhere", Prompt: "Go."}, event.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if res.Result.StopReason != event.StopError || res.Result.Err == nil || !strings.Contains(res.Result.Err.Error(), "agent card http://127.0.0.1:1/agents/none/.well-known/agent-card.json") {
		t.Errorf("nowhere: %s %v", res.Result.StopReason, res.Result.Err)
	}

	t.Setenv("A2A_TEST_TOKEN", "")
	path := filepath.Join(t.TempDir(), "agentpool.yaml")
	if err := os.WriteFile(path, []byte("agents:\n  r:\n    type: a2a\n    url: http://127.0.0.1:1/\n    auth_env: A2A_TEST_TOKEN\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := config.LoadWith(path, batteries.ConfigOptions(batteries.Registry()))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pool.New(m, pool.Options{Registry: batteries.Registry()}); err == nil || !strings.Contains(err.Error(), "agentpool.yaml:2") || !strings.Contains(err.Error(), "A2A_TEST_TOKEN") {
		t.Errorf("unset auth_env: %v", err)
	}
}
