package acpagent

import (
	"context"
	"errors"
	"fmt"
	"github.com/agentpool/agentpool/external/member"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"time"

	acp "github.com/coder/acp-go-sdk"

	"github.com/agentpool/agentpool/checkpoint"
	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/internal/detach"
	"github.com/agentpool/agentpool/model"
	"github.com/agentpool/agentpool/spawn"
	"github.com/agentpool/agentpool/tool"
	"github.com/agentpool/agentpool/tool/files"
	"github.com/agentpool/agentpool/tool/workspace"
)

// Node is an external ACP agent as a node of the pool (spawn.Node): a
// member of teams, a worker, a target of the task tool, or the root.
type Node struct {
	cfg   Config
	ws    *workspace.Workspace
	tools map[string]tool.Tool // the file tools that serve fs/*
	// watch captures what the commands of the agent's terminals change
	// (docs/checkpoints.md), and keeps their baselines true of what
	// fs/write_text_file changes; shared by the copies WithTools makes.
	watch *checkpoint.Watcher
	// served and toolsets are served to the agent over MCP, with the
	// toolsets lent to the run, when serves (WithTools).
	served   []tool.Tool
	toolsets []tool.Toolset
	serves   bool
}

var _ spawn.Node = (*Node)(nil)

// New checks cfg and returns its node. A command that is not installed
// is an error (ErrNoCommand) that says how to install it.
func New(cfg Config) (*Node, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	ws, err := workspace.New(cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("acpagent: agent %s: %w", cfg.Name, err)
	}
	n := &Node{cfg: cfg, ws: ws, tools: map[string]tool.Tool{}, watch: &checkpoint.Watcher{}}
	ft := files.New(ws)
	ft.SetCheckpointer(n.watch.Checkpointer()) // fs/write_text_file is checkpointed as our Write is
	for _, t := range ft.Tools() {
		n.tools[t.Info().Name] = t
	}
	return n, nil
}

func (n *Node) Name() string                 { return n.cfg.Name }
func (n *Node) Description() string          { return n.cfg.Description }
func (n *Node) SourceType() event.SourceType { return event.SourceAgent }

// ModelID names the agent's program: "acp:" and the command's base name.
func (n *Node) ModelID() string { return "acp:" + filepath.Base(n.cfg.Command) }

func (n *Node) fileTool(name string) (tool.Tool, bool) { t, ok := n.tools[name]; return t, ok }

// runKey is the key of a member's agent in a root run (RunScoped).
type runKey struct{ n *Node }

// Run runs one delegation: the member's agent in this root run (started
// by its first delegation), a new ACP session in it, one prompt. The
// agent's updates become the session's events as they come; the result
// is the agent's final message. Cancelling ctx sends session/cancel and
// kills the agent when it does not answer within CancelGrace. An agent
// that fails to start, crashes or errs fails this session only, with the
// tail of its stderr.
func (n *Node) Run(ctx context.Context, inv *spawn.Invocation) spawn.Result {
	inv.Sink.Emit(event.RunStarted{SessionID: inv.Session.ID, RunID: inv.RunID, AgentName: n.cfg.Name, ParentSessionID: inv.Session.ParentID})
	if inv.Env != nil {
		return n.fail(inv, errors.New("external agents do not run on a durable engine yet"), "unsupported")
	}
	a := inv.RunScoped(runKey{n}, func() (any, func()) {
		a := newAgentConn(n)
		return a, a.stop
	}).(*agentConn)
	conn, err := a.connect(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return n.abort(inv, context.Cause(ctx))
		}
		return n.fail(inv, fmt.Errorf("agent %s: %w", n.cfg.Name, err), "agent_start")
	}
	t := newTurn(ctx, n, inv)
	servers, err := n.sessionServers(ctx, inv, a, t)
	if err != nil {
		t.close()
		return n.fail(inv, fmt.Errorf("agent %s: %w", n.cfg.Name, err), "agent_error")
	}
	acpSession, prompt, err := n.openSession(ctx, a, conn, inv, servers)
	if err != nil {
		t.close()
		if ctx.Err() != nil {
			return n.abort(inv, context.Cause(ctx))
		}
		return n.fail(inv, fmt.Errorf("agent %s: %s%s", n.cfg.Name, describeErr(err), a.describeProc()), "agent_error")
	}
	sid := string(acpSession)
	a.add(sid, t)
	defer a.remove(sid)
	defer t.closeTerminals() // no command of the session outlives it

	t.cp.setMessage(n.store(ctx, inv, model.UserText(inv.Prompt)))
	msgs := []model.Message{model.UserText(inv.Prompt)}
	resp, err, killed := n.prompt(ctx, a, conn, acpSession, prompt)
	usage := promptUsage(resp)
	// What reaches the session's inbox while the agent works (an async
	// child's result, a message for it) is its next prompt, once its turn
	// ended, as our own agents take it with their next model request.
	for err == nil && !killed && resp.StopReason == acp.StopReasonEndTurn {
		if !inv.WaitInjected(ctx) {
			if ctx.Err() != nil {
				err = context.Cause(ctx)
			}
			break
		}
		next := model.Message{Role: model.RoleUser, Parts: []model.Part{{Kind: model.PartText, Text: strings.Join(inv.Injected(), "\n\n")}}, Synthetic: true}
		if reply := t.between(); reply != "" {
			msgs = append(msgs, n.reply(ctx, inv, reply))
		}
		t.cp.setMessage(n.store(ctx, inv, next))
		msgs = append(msgs, next)
		resp, err, killed = n.prompt(ctx, a, conn, acpSession, next.Parts[0].Text)
		usage.Add(promptUsage(resp))
	}
	why := "the prompt was answered"
	switch {
	case killed:
		why = "the agent was killed"
	case err != nil:
		why = "the agent failed"
	case resp.StopReason == acp.StopReasonCancelled:
		why = "the turn was cancelled"
	}
	final := t.finish(why)
	if final != "" {
		msgs = append(msgs, n.reply(ctx, inv, final))
	}
	res := spawn.Result{Output: final, Usage: usage, Cost: t.cost, Messages: msgs}
	switch {
	case killed:
		err := fmt.Errorf("agent %s did not answer session/cancel within %v and was killed%s", n.cfg.Name, n.cfg.CancelGrace, a.describeProc())
		inv.Sink.Emit(event.RunError{Message: err.Error(), Code: "aborted", RunID: inv.RunID, AgentName: n.cfg.Name})
		res.StopReason, res.Err = event.StopAborted, err
		return res
	case err != nil && ctx.Err() != nil:
		r := n.abort(inv, context.Cause(ctx))
		res.StopReason, res.Err = r.StopReason, r.Err
		return res
	case err != nil:
		err := fmt.Errorf("agent %s: session/prompt: %s%s", n.cfg.Name, describeErr(err), a.describeProc())
		inv.Sink.Emit(event.RunError{Message: err.Error(), Code: "agent_error", RunID: inv.RunID, AgentName: n.cfg.Name})
		res.StopReason, res.Err = event.StopError, err
		return res
	}
	switch resp.StopReason {
	case acp.StopReasonCancelled:
		cause := context.Cause(ctx)
		if cause == nil {
			cause = errors.New("the agent cancelled its turn")
		}
		r := n.abort(inv, cause)
		res.StopReason, res.Err = r.StopReason, r.Err
		return res
	case acp.StopReasonMaxTurnRequests:
		err := fmt.Errorf("agent %s stopped: it reached its limit of model requests", n.cfg.Name)
		inv.Sink.Emit(event.RunError{Message: err.Error(), Code: "max_turns", RunID: inv.RunID, AgentName: n.cfg.Name})
		res.StopReason, res.Err = event.StopError, err
		return res
	case acp.StopReasonMaxTokens:
		res.StopReason = event.StopMaxTokens
	case acp.StopReasonRefusal:
		res.StopReason = event.StopRefusal
	default:
		res.StopReason = event.StopCompleted
	}
	inv.Sink.Emit(event.StreamComplete{Message: event.Message{
		Role: "assistant", Content: final, Usage: usage, Cost: t.cost, Model: n.ModelID(), FinishReason: finishReason(resp.StopReason),
	}})
	return res
}

// prompt sends session/prompt and waits for its answer. When ctx ends
// first it sends session/cancel and waits CancelGrace for the answer
// (stop reason cancelled), then kills the agent (killed: true).
func (n *Node) prompt(ctx context.Context, a *agentConn, conn *acp.ClientSideConnection, sid acp.SessionId, text string) (acp.PromptResponse, error, bool) {
	type answer struct {
		resp acp.PromptResponse
		err  error
	}
	done := make(chan answer, 1)
	go func() {
		// Not ctx: a cancelled run still waits for the agent's answer
		// (the SDK would stop waiting at once).
		r, err := conn.Prompt(detach.Context(ctx), acp.PromptRequest{SessionId: sid, Prompt: []acp.ContentBlock{acp.TextBlock(text)}})
		done <- answer{r, err}
	}()
	select {
	case r := <-done:
		return r.resp, r.err, false
	case <-ctx.Done():
	}
	if err := conn.Cancel(detach.Context(ctx), acp.CancelNotification{SessionId: sid}); err != nil {
		n.cfg.Logger.Debug("acpagent: session/cancel", "agent", n.cfg.Name, "err", err)
	}
	grace := time.NewTimer(n.cfg.CancelGrace)
	defer grace.Stop()
	select {
	case r := <-done:
		return r.resp, r.err, false
	case <-grace.C:
	}
	n.cfg.Logger.Warn("acpagent: the agent did not answer session/cancel in time; killing it", "agent", n.cfg.Name, "grace", n.cfg.CancelGrace)
	a.kill()
	r := <-done // the connection closed with the agent
	return r.resp, r.err, true
}

// reply stores the agent's answer to a prompt and returns it as a message.
func (n *Node) reply(ctx context.Context, inv *spawn.Invocation, text string) model.Message {
	m := model.Message{Role: model.RoleAssistant, Parts: []model.Part{{Kind: model.PartText, Text: text}}}
	n.store(ctx, inv, m)
	return m
}

// promptUsage is the usage a session/prompt answer reports (zero when it
// reports none).
func promptUsage(resp acp.PromptResponse) event.Usage {
	u := resp.Usage
	if u == nil {
		return event.Usage{}
	}
	usage := event.Usage{InputTokens: int64(u.InputTokens), OutputTokens: int64(u.OutputTokens)}
	if u.CachedReadTokens != nil {
		usage.CacheReadTokens = int64(*u.CachedReadTokens)
	}
	if u.CachedWriteTokens != nil {
		usage.CacheWriteTokens = int64(*u.CachedWriteTokens)
	}
	if u.ThoughtTokens != nil {
		usage.ReasoningTokens = int64(*u.ThoughtTokens)
	}
	return usage
}

// store keeps a message of the child's conversation (its transcript)
// and returns its id ("" when not kept).
func (n *Node) store(ctx context.Context, inv *spawn.Invocation, m model.Message) string {
	return member.Store(ctx, inv, n.cfg.Name, n.cfg.Logger, m)
}

func (n *Node) fail(inv *spawn.Invocation, err error, code string) spawn.Result {
	return member.Fail(inv, n.cfg.Name, err, code)
}

func (n *Node) abort(inv *spawn.Invocation, cause error) spawn.Result {
	return member.Abort(inv, n.cfg.Name, cause)
}

// mcpServers are the member's MCP servers as session/new takes them;
// refused are those whose transport the agent does not take (initialize:
// mcpCapabilities; stdio, every agent must), with why.
func mcpServers(servers []config.MCPServer, caps acp.McpCapabilities) (out []acp.McpServer, refused map[string]string) {
	out = []acp.McpServer{} // never null: the field is required
	for _, s := range servers {
		if !s.Enabled {
			continue
		}
		if why := transportRefused(s.Type, caps); why != "" {
			if refused == nil {
				refused = map[string]string{}
			}
			refused[s.Name] = why
			continue
		}
		switch s.Type {
		case config.MCPStdio:
			env := []acp.EnvVariable{}
			for _, k := range slices.Sorted(maps.Keys(s.Env)) {
				env = append(env, acp.EnvVariable{Name: k, Value: s.Env[k]})
			}
			args := s.Args
			if args == nil {
				args = []string{}
			}
			out = append(out, acp.McpServer{Stdio: &acp.McpServerStdio{Name: s.Name, Command: s.Command, Args: args, Env: env}})
		case config.MCPSSE:
			out = append(out, acp.McpServer{Sse: &acp.McpServerSseInline{Name: s.Name, Url: s.URL, Headers: headers(s.Headers), Type: "sse"}})
		default:
			out = append(out, acp.McpServer{Http: &acp.McpServerHttpInline{Name: s.Name, Url: s.URL, Headers: headers(s.Headers), Type: "http"}})
		}
	}
	return out, refused
}

// transportRefused says why the agent cannot take an MCP server of
// transport typ ("" when it can).
func transportRefused(typ string, caps acp.McpCapabilities) string {
	switch {
	case typ == config.MCPStdio:
		return ""
	case typ == config.MCPSSE && !caps.Sse:
		return "the agent does not take MCP servers over SSE (its initialize answered mcpCapabilities.sse false)"
	case typ != config.MCPSSE && !caps.Http:
		return "the agent does not take MCP servers over HTTP (its initialize answered mcpCapabilities.http false)"
	}
	return ""
}

func headers(h map[string]string) []acp.HttpHeader {
	out := []acp.HttpHeader{}
	for _, k := range slices.Sorted(maps.Keys(h)) {
		out = append(out, acp.HttpHeader{Name: k, Value: h[k]})
	}
	return out
}

// finishReason is the finish reason of a completed turn in the pool's
// normalized words (model.FinishStop, ...), which every front end maps
// (OpenCode's "stop", ...), not ACP's stop reason.
func finishReason(r acp.StopReason) string {
	switch r {
	case acp.StopReasonMaxTokens:
		return model.FinishLength
	case acp.StopReasonRefusal:
		return model.FinishRefusal
	}
	return model.FinishStop
}
