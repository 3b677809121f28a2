package acpagent_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentpool/agentpool/agent"
	"github.com/agentpool/agentpool/approval"
	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/external/acpagent"
	"github.com/agentpool/agentpool/hook"
	"github.com/agentpool/agentpool/model/testmodel"
	"github.com/agentpool/agentpool/pool"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/spawn"
	"github.com/agentpool/agentpool/tool"
)

// delegator delegates each of its prompts, in order, to the node named
// child as the pool runs it (looked up: the node with its tools), and
// answers with the children's outputs, one per line.
type delegator struct {
	name, child string
	prompts     []string
}

func (n delegator) Name() string                 { return n.name }
func (n delegator) Description() string          { return "" }
func (n delegator) SourceType() event.SourceType { return event.SourceAgent }
func (n delegator) ModelID() string              { return "" }
func (n delegator) Run(ctx context.Context, inv *spawn.Invocation) spawn.Result {
	inv.Sink.Emit(event.RunStarted{SessionID: inv.Session.ID, RunID: inv.RunID, AgentName: n.name, ParentSessionID: inv.Session.ParentID})
	child, _ := inv.Runtime.Lookup(n.child)
	var outs []string
	for _, p := range n.prompts {
		c, err := spawn.Spawn(ctx, inv, spawn.Request{Node: child, Prompt: p, Mechanism: event.MechanismManual})
		if err != nil {
			inv.Sink.Emit(event.RunError{Message: err.Error(), RunID: inv.RunID, AgentName: n.name})
			return spawn.Result{StopReason: event.StopError, Err: err}
		}
		outs = append(outs, c.Result.Output)
	}
	out := strings.Join(outs, "\n")
	inv.Sink.Emit(event.StreamComplete{Message: event.Message{Role: "assistant", Content: out}})
	return spawn.Result{Output: out}
}

// servedPool is a pool of the test agent mcpagent as member "ext" (its
// tools nt, its Config changed by edit), a native agent "helper" that
// answers "helper says hi", and a delegator "parent" that sends prompts
// to ext; the pool's workspace is dir.
func servedPool(t *testing.T, reg *hook.Registry, answer func(approval.Request) approval.Reply, nt pool.NodeTools, edit func(*acpagent.Config), prompts ...string) (*pool.Pool, *approvals, string) {
	t.Helper()
	dir := t.TempDir()
	cfg := acpagent.Config{Name: "ext", Command: mcpAgent, Dir: dir}
	if edit != nil {
		edit(&cfg)
	}
	ext := newNode(t, cfg)
	helper, err := testmodel.New(testmodel.Config{Text: "helper says hi"})
	if err != nil {
		t.Fatal(err)
	}
	p, seen := testPoolConfig(t, reg, answer, pool.Config{
		Agents:    []pool.AgentSpec{{Name: "helper", Description: "says hi", Model: helper}},
		Nodes:     []spawn.Node{ext, delegator{name: "parent", child: "ext", prompts: prompts}},
		NodeTools: map[string]pool.NodeTools{"ext": nt},
		Workspace: dir,
	})
	return p, seen, dir
}

// The member's toolsets are served to its agent: it lists them, reads a
// file of the workspace with our Read, and delegates with our task tool;
// the delegation is a child of the member's session (a grandchild of the
// root), announced by spawn_session_start in the member's session with
// the tool call id the agent gave the call.
func TestServedToolsRunInTheChildSession(t *testing.T) {
	servedRun(t, nil)
}

// An agent that takes MCP over stdio only gets the same tools through
// the relay (Config.Relay: here this test binary as `mcp-relay`), which
// it starts as the stdio server "agentpool": it lists them, reads with
// our Read, and its delegation with our task is a child of its session.
func TestServedOverTheStdioRelay(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	evs := servedRun(t, func(c *acpagent.Config) {
		c.Env = map[string]string{"MCPAGENT_NO_HTTP": "1"}
		c.Relay = []string{exe, relayArg}
	})
	for _, e := range evs {
		if s, ok := e.(event.Subagent); ok {
			if c, ok := s.Event.(event.Custom); ok && c.EventType == agent.EventToolsetError {
				t.Errorf("toolset error %v", c.EventData)
			}
		}
	}
}

// servedRun runs the test agent mcpagent as member ext (its Config
// changed by edit) with the file_access and subagent toolsets: it lists
// the tools, reads a file with our Read and delegates to helper with our
// task, whose session must be a child of ext's, announced with the
// agent's own call id. It returns the run's events.
func servedRun(t *testing.T, edit func(*acpagent.Config)) []event.Event {
	t.Helper()
	p, _, dir := servedPool(t, hook.New(hook.Options{}), nil, pool.NodeTools{Builtin: []string{config.ToolsetFileAccess, config.ToolsetSubagent}}, edit,
		`list
call Read {"file_path":"notes.txt"}
call task {"agent_or_team":"helper","prompt":"say hi"}`)
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("remember the milk\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	res, evs := run(t, context.Background(), p, "parent", "", nil)
	if res.Result.StopReason != event.StopCompleted {
		t.Fatalf("result %+v", res.Result)
	}
	out := res.Result.Output
	for _, want := range []string{"tools: Edit,", ",Read,", ",task,", "remember the milk", `"output":"helper says hi"`} {
		if !strings.Contains(out, want) {
			t.Errorf("output %q lacks %q", out, want)
		}
	}
	var extID, grandID string
	for _, e := range evs {
		s, ok := e.(event.Subagent)
		if !ok {
			continue
		}
		if st, ok := s.Event.(event.SpawnSessionStart); ok && st.SourceName == "helper" {
			extID, grandID = s.ChildSessionID, st.ChildSessionID
			if st.ParentSessionID != extID || st.ToolCallID != "tc_2" || st.SpawnMechanism != event.MechanismTask {
				t.Errorf("grandchild start %+v (in session %s)", st, extID)
			}
		}
	}
	if grandID == "" {
		t.Fatal("no spawn_session_start of helper in the member's session")
	}
	st := p.Store()
	ext, err := st.GetSession(context.Background(), extID)
	if err != nil || ext.ParentID != res.SessionID || ext.AgentName != "ext" {
		t.Fatalf("member session %+v, %v", ext, err)
	}
	grand, err := st.GetSession(context.Background(), grandID)
	if err != nil || grand.ParentID != extID || grand.Status != session.StatusCompleted {
		t.Errorf("grandchild %+v, %v", grand, err)
	}
	tree, err := session.Subtree(context.Background(), st, res.SessionID)
	if err != nil || len(tree) != 3 {
		t.Errorf("session tree of %d sessions, %v", len(tree), err)
	}
	return evs
}

// A served call goes through tools/pre-execute as the member's: a hook
// sees it (member, child session, the agent's call id) and may deny it;
// Write asks the approval flow, whose refusal keeps the file from being
// written and whose grant lets it.
func TestServedToolsGoThroughHooksAndApprovals(t *testing.T) {
	reg := hook.New(hook.Options{})
	var calls []hook.ToolCall
	reg.OnPreExecute.Use(func(ctx context.Context, c hook.ToolCall, next hook.Next[hook.ToolCall, agent.ToolDecision]) agent.ToolDecision {
		calls = append(calls, c) // one call at a time: the agent waits for each
		if c.ToolName == "Glob" {
			return agent.ToolDecision{Action: agent.ToolDeny, Reason: "no globbing here"}
		}
		return next(ctx, c)
	})
	answers := []approval.Reply{approval.RejectOnce, approval.AllowOnce}
	p, seen, dir := servedPool(t, reg, func(approval.Request) approval.Reply {
		a := answers[0]
		answers = answers[1:]
		return a
	}, pool.NodeTools{Builtin: []string{config.ToolsetFileAccess}}, nil,
		`call Glob {"pattern":"*"}
call Write {"file_path":"a.txt","content":"first"}
call Write {"file_path":"b.txt","content":"second"}`)
	res, _ := run(t, context.Background(), p, "parent", "", nil)
	out := res.Result.Output
	if !strings.Contains(out, "Glob: tool Glob denied: no globbing here") {
		t.Errorf("output %q: the hook's denial is not the result", out)
	}
	if _, err := os.Stat(filepath.Join(dir, "a.txt")); !os.IsNotExist(err) {
		t.Errorf("a.txt was written although the approval was refused (%v)", err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "b.txt")); err != nil || string(b) != "second" {
		t.Errorf("b.txt = %q, %v", b, err)
	}
	if len(calls) != 3 || calls[0].Agent != "ext" || calls[0].CallID != "tc_1" || calls[2].CallID != "tc_3" || calls[2].ToolName != "Write" {
		t.Errorf("pre-execute saw %+v", calls)
	}
	reqs := seen.all()
	if len(reqs) != 2 || reqs[0].Agent != "ext" || reqs[0].Tool != "Write" || reqs[0].SessionID != calls[0].SessionID || reqs[0].SessionID == res.SessionID {
		t.Errorf("approval requests %+v", reqs)
	}
}

// A served call that the agent leaves running when its turn ends is
// cancelled and waited for before the member's session ends: nothing of
// it outlives the delegation.
func TestServedCallEndsWithItsTurn(t *testing.T) {
	started, ended := make(chan struct{}), make(chan error, 1)
	block := tool.New("block", "Blocks until cancelled", func(ctx context.Context, _ tool.Call, _ struct{}) (tool.Result, error) {
		close(started)
		<-ctx.Done()
		ended <- ctx.Err()
		return tool.Result{Content: "cancelled"}, nil
	})
	wait := tool.New("wait_started", "Waits for block to start", func(ctx context.Context, _ tool.Call, _ struct{}) (tool.Result, error) {
		select {
		case <-started:
			return tool.Result{Content: "block started"}, nil
		case <-ctx.Done():
			return tool.Result{}, ctx.Err()
		}
	})
	p, _, _ := servedPool(t, hook.New(hook.Options{}), nil, pool.NodeTools{Tools: []tool.Tool{block, wait}}, nil,
		"detach block {}\ncall wait_started {}")
	res, _ := run(t, context.Background(), p, "parent", "", nil)
	if !strings.Contains(res.Result.Output, "wait_started: block started") {
		t.Fatalf("output %q", res.Result.Output)
	}
	select {
	case err := <-ended:
		if err == nil {
			t.Error("block ended without its context done")
		}
	default:
		t.Error("the run ended with the served call still running")
	}
}

// Each delegation's endpoint takes bodies up to its bound (413 past it)
// and ends with its delegation (404 for the next one); a member's own MCP
// server is passed in session/new next to agentpool's.
func TestServedEndpointBounds(t *testing.T) {
	own := []config.MCPServer{{Name: "own", Type: config.MCPStdio, Command: "true", Enabled: true}, {Name: "off", Type: config.MCPStdio, Command: "true"}}
	p, _, _ := servedPool(t, hook.New(hook.Options{}), nil, pool.NodeTools{Builtin: []string{config.ToolsetPlan}},
		func(c *acpagent.Config) { c.MCPServers = own },
		"servers\npost 5000000", "old")
	res, _ := run(t, context.Background(), p, "parent", "", nil)
	if want := "servers: own,agentpool\nstatus 413\nstatus 404"; res.Result.Output != want {
		t.Errorf("output %q, want %q", res.Result.Output, want)
	}
}

// An agent that takes no MCP server over HTTP is served nothing, and the
// member's HTTP servers are left out too: each is a toolset_error event
// of the member's session, and the delegation goes on.
func TestServedNothingWithoutHTTP(t *testing.T) {
	own := []config.MCPServer{{Name: "web", Type: config.MCPStreamableHTTP, URL: "http://127.0.0.1:1/mcp", Enabled: true}}
	p, _, _ := servedPool(t, hook.New(hook.Options{}), nil, pool.NodeTools{Builtin: []string{config.ToolsetPlan}},
		func(c *acpagent.Config) { c.MCPServers, c.Env = own, map[string]string{"MCPAGENT_NO_HTTP": "1"} },
		"servers")
	res, evs := run(t, context.Background(), p, "parent", "", nil)
	if res.Result.Output != "servers:" {
		t.Errorf("output %q", res.Result.Output)
	}
	var errs []string
	for _, e := range evs {
		if s, ok := e.(event.Subagent); ok {
			if c, ok := s.Event.(event.Custom); ok && c.EventType == agent.EventToolsetError {
				errs = append(errs, c.EventData["toolset"].(string)+": "+c.EventData["error"].(string))
			}
		}
	}
	if len(errs) != 2 || !strings.HasPrefix(errs[0], "mcp server web: the agent does not take MCP servers over HTTP") ||
		!strings.HasPrefix(errs[1], "mcp server agentpool: the agent does not take MCP servers over HTTP") {
		t.Errorf("toolset errors %q", errs)
	}
}

// agentpool's server name is its own.
func TestServedNameIsReserved(t *testing.T) {
	_, err := acpagent.New(acpagent.Config{Name: "ext", Command: mcpAgent, MCPServers: []config.MCPServer{{Name: acpagent.ServedName, Type: config.MCPStdio, Command: "x", Enabled: true}}})
	if err == nil || !strings.Contains(err.Error(), "rename it") {
		t.Errorf("err = %v", err)
	}
}
