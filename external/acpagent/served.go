package acpagent

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	acp "github.com/coder/acp-go-sdk"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentpool/agentpool/agent"
	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/external/acpagent/mcprelay"
	"github.com/agentpool/agentpool/spawn"
	"github.com/agentpool/agentpool/tool"
)

// servedCalls numbers the served tool calls that the agent's own
// tool_call does not name (their hooks' call ids).
var servedCalls atomic.Int64

// WithTools returns a copy of n that serves tools, and the tools of
// toolsets, to its agent as the MCP server ServedName of each
// delegation (pool.ToolNode: the pool gives a member the tools of its
// `toolsets:` and workers this way). The toolsets are asked for their
// tools at the start of each delegation, as an agent's are at the start
// of a run.
func (n *Node) WithTools(tools []tool.Tool, toolsets []tool.Toolset) spawn.Node {
	c := *n
	c.served = slices.Clone(tools)
	c.toolsets = slices.Clone(toolsets)
	c.serves = true
	return &c
}

// servedTools are the tools a delegation serves: the member's own, those
// of its toolsets and of the toolsets the run was lent (an ACP client's
// MCP servers, Invocation.Toolsets), each name once (the first wins). A
// toolset that fails costs the delegation its tools only: it is a
// toolset_error event of the child session, as for an agent.
func (n *Node) servedTools(ctx context.Context, inv *spawn.Invocation) []tool.Tool {
	out := slices.Clone(n.served)
	for _, ts := range slices.Concat(n.toolsets, inv.Toolsets) {
		got, err := ts.Tools(ctx)
		if err != nil {
			n.toolsetError(inv, ts.Name(), err.Error())
			continue
		}
		out = append(out, got...)
	}
	seen := map[string]bool{}
	return slices.DeleteFunc(out, func(t tool.Tool) bool {
		name := t.Info().Name
		dup := seen[name]
		seen[name] = true
		return dup
	})
}

// mcpHandler is the MCP endpoint of one delegation (stateless
// streamable HTTP: each request is whole in itself, so no MCP session
// outlives it): tools/list lists tools, tools/call runs one as a call of
// the turn's child session.
func (t *turn) mcpHandler(tools []tool.Tool) http.Handler {
	log := t.n.cfg.Logger.With("acp_agent", t.n.cfg.Name, "mcp", ServedName)
	srv := mcp.NewServer(&mcp.Implementation{Name: ServedName, Version: "1"}, &mcp.ServerOptions{
		Logger:       log,
		Capabilities: &mcp.ServerCapabilities{}, // tools only (inferred), no logging
	})
	for _, tl := range tools {
		info := tl.Info()
		srv.AddTool(&mcp.Tool{Name: info.Name, Description: info.Description, InputSchema: objectSchema(info.Parameters)},
			func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				res := t.serve(tl, req.Params.Arguments)
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: res.Content}}, IsError: res.IsError}, nil
			})
	}
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{
		Stateless: true, JSONResponse: true, MaxRequestBodyBytes: maxServedRequest, Logger: log,
	})
}

// serve runs one tool call of the agent as a call of the child session:
// with the child's invocation in its context (so that a delegation from
// it is a child of this session), through tools/pre-execute (hooks, the
// member's tool_approval, the approval flow) and tools/post-execute. The
// call ends with the turn: the turn's end cancels it and waits for it.
// It runs under the delegation's context, not the HTTP request's: what
// it starts in the background (task with async_mode) outlives the call,
// as it does from our own agents, and a call the agent stopped waiting
// for still runs to its end or the delegation's (docs/external-agents.md).
func (t *turn) serve(tl tool.Tool, args json.RawMessage) tool.Result {
	name := tl.Info().Name
	if !t.enter() {
		return tool.Errorf("%s: the delegation this tool was served to has ended", name)
	}
	defer t.leave()
	ctx := spawn.WithInvocation(t.calls, t.inv)
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage("{}")
	}
	id := t.claim(ctx, name, args)
	if id == "" {
		id = "acpmcp_" + strconv.FormatInt(servedCalls.Add(1), 10)
	}
	call := tool.Call{ID: id, Name: name, Args: slices.Clone(args), SessionID: t.inv.Session.ID}
	hooks, _ := t.inv.Runtime.Lifecycle().(agent.Hooks)
	if hooks == nil {
		return tool.Run(ctx, tl, call)
	}
	info := agent.ToolInfo{Agent: t.n.cfg.Name, SessionID: t.inv.Session.ID, ToolName: name, CallID: call.ID, Input: slices.Clone(call.Args)}
	d := hooks.PreTool(ctx, info)
	if !d.Allows() {
		reason := d.Reason
		if d.Action != agent.ToolDeny {
			reason = fmt.Sprintf("tools/pre-execute answered %q, which is not allow or deny", d.Action)
		}
		return tool.Errorf("tool %s denied: %s", name, reason)
	}
	if len(d.UpdatedInput) > 0 && json.Valid(d.UpdatedInput) {
		call.Args = slices.Clone(d.UpdatedInput)
		info.Input = slices.Clone(d.UpdatedInput)
	}
	return hooks.PostTool(ctx, info, tool.Run(ctx, tl, call))
}

// objectSchema is a tool's parameters as MCP requires them: a JSON
// schema object of type "object" ({"type": "object"} when the tool has
// none or another).
func objectSchema(params json.RawMessage) json.RawMessage {
	var s struct {
		Type any `json:"type"`
	}
	if len(params) == 0 || json.Unmarshal(params, &s) != nil || s.Type != "object" {
		return json.RawMessage(`{"type":"object"}`)
	}
	return params
}

// sessionServers are the MCP servers of a delegation's session/new: the
// member's own, and ServedName when the node serves tools (WithTools)
// and has some (the turn's route on the run's bridge, removed when the
// turn closes): over HTTP, or, to an agent that takes no MCP over HTTP,
// as a stdio server that runs Config.Relay to that route. A
// server the agent cannot take (its initialize's mcpCapabilities) is left
// out, as a toolset that fails is for an agent: a toolset_error event of
// the child session says why, and the delegation goes on without it.
func (n *Node) sessionServers(ctx context.Context, inv *spawn.Invocation, a *agentConn, t *turn) ([]acp.McpServer, error) {
	caps := a.capabilities().McpCapabilities
	out, refused := mcpServers(n.cfg.MCPServers, caps)
	for _, name := range slices.Sorted(maps.Keys(refused)) {
		n.toolsetError(inv, "mcp server "+name, refused[name])
	}
	if !n.serves {
		return out, nil
	}
	tools := n.servedTools(ctx, inv)
	if len(tools) == 0 {
		return out, nil
	}
	overHTTP := transportRefused(config.MCPStreamableHTTP, caps) == ""
	if !overHTTP && len(n.cfg.Relay) == 0 {
		why := transportRefused(config.MCPStreamableHTTP, caps)
		n.toolsetError(inv, "mcp server "+ServedName, why+" and no stdio relay is set: the member's tools are not served to it")
		return out, nil
	}
	url, remove, err := a.serve(t.mcpHandler(tools))
	if err != nil {
		return nil, err
	}
	t.unserve = remove
	if !overHTTP {
		// Every agent takes stdio: the relay it starts reaches the same
		// endpoint (the URL, a secret, in its environment, not its
		// command line).
		return append(out, acp.McpServer{Stdio: &acp.McpServerStdio{
			Name: ServedName, Command: n.cfg.Relay[0], Args: append([]string{}, n.cfg.Relay[1:]...),
			Env: []acp.EnvVariable{{Name: mcprelay.EnvURL, Value: url}},
		}}), nil
	}
	return append(out, acp.McpServer{Http: &acp.McpServerHttpInline{Name: ServedName, Url: url, Headers: []acp.HttpHeader{}, Type: "http"}}), nil
}

// toolsetError tells the child session that a toolset could not be
// offered (agent.EventToolsetError, as an agent reports one).
func (n *Node) toolsetError(inv *spawn.Invocation, toolset, why string) {
	inv.Sink.Emit(event.Custom{EventType: agent.EventToolsetError, Source: "agent", EventData: map[string]any{
		"agent": n.cfg.Name, "toolset": toolset, "error": why,
	}})
}

// announcedCall is a tool call the agent announced (session/update),
// as a served call may claim it.
type announcedCall struct {
	id, title     string
	input         json.RawMessage
	claimed, done bool
}

// note records what the agent said of its tool call id (under the
// turn's lock: served calls read it from other goroutines).
func (t *turn) note(id, title string, input json.RawMessage, done bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	close(t.noted) // wakes the claims waiting
	t.noted = make(chan struct{})
	for _, c := range t.announced {
		if c.id == id {
			c.title, c.input, c.done = title, input, c.done || done
			return
		}
	}
	t.announced = append(t.announced, &announcedCall{id: id, title: title, input: input, done: done})
}

// claimWait bounds how long a served call waits for the agent's
// announcement of it: agents announce a call (session/update) before
// they make it, but the notification and the MCP request travel apart
// and either may arrive first.
const claimWait = 2 * time.Second

// claim finds the agent's own id of a served call of tool name with
// args: the first call the agent announced, not ended nor claimed yet,
// whose title names the tool (opencode's agentpool_<tool>, Claude Code's
// mcp__agentpool__<tool>) and whose input, when the agent has sent it
// yet, is args; an announcement still in flight is waited for, up to
// claimWait. The served call then goes by that id (hooks, approvals,
// the tool_call_id of a delegation it makes), so that front ends tie
// what it does to the call they show. "" when none comes: the agent
// names its calls otherwise, or announces none.
func (t *turn) claim(ctx context.Context, name string, args json.RawMessage) string {
	timer := time.NewTimer(claimWait)
	defer timer.Stop()
	for {
		t.mu.Lock()
		for _, c := range t.announced {
			if c.claimed || c.done || !namesTool(c.title, name) {
				continue
			}
			if len(c.input) > 0 && string(c.input) != "{}" && !sameJSON(c.input, args) {
				continue
			}
			c.claimed = true
			t.mu.Unlock()
			return c.id
		}
		noted := t.noted
		t.mu.Unlock()
		select {
		case <-noted:
		case <-timer.C:
			return ""
		case <-ctx.Done():
			return ""
		}
	}
}

// namesTool reports whether an agent's title of a call names the served
// tool name.
func namesTool(title, name string) bool {
	return strings.Contains(title, ServedName) && strings.HasSuffix(title, "_"+name)
}

// sameJSON reports whether a and b are the same JSON value.
func sameJSON(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}
