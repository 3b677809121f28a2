package aguiagent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/agentpool/agentpool/external/member"
	"net/url"
	"strings"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/id"
	"github.com/agentpool/agentpool/model"
	"github.com/agentpool/agentpool/spawn"
)

// maxToolText bounds a remote tool call's arguments and result.
const maxToolText = 1 << 20

// Node is a remote AG-UI agent as a node of the pool (spawn.Node).
type Node struct {
	cfg Config
	srv server
}

var _ spawn.Node = (*Node)(nil)

// New checks cfg and returns its node; nothing is sent yet.
func New(cfg Config) (*Node, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	return &Node{cfg: cfg}, nil
}

func (n *Node) Name() string { return n.cfg.Name }

// Description is Config.Description, else says where the agent is.
func (n *Node) Description() string {
	if n.cfg.Description == "" {
		return "a remote AG-UI agent at " + n.cfg.Endpoint
	}
	return n.cfg.Description
}
func (n *Node) SourceType() event.SourceType { return event.SourceAgent }

// ModelID names the remote agent: "agui:" and its host.
func (n *Node) ModelID() string {
	if u, err := url.Parse(n.cfg.Endpoint); err == nil {
		return "agui:" + u.Host
	}
	return "agui"
}

// ThreadID is the AG-UI thread of a child session.
func ThreadID(sessionID string) string { return "agentpool-" + sessionID }

// Run runs one delegation: one AG-UI run of the remote agent, its stream
// followed to its end (see the package documentation).
func (n *Node) Run(ctx context.Context, inv *spawn.Invocation) spawn.Result {
	inv.Sink.Emit(event.RunStarted{SessionID: inv.Session.ID, RunID: inv.RunID, AgentName: n.cfg.Name, ParentSessionID: inv.Session.ParentID})
	if inv.Env != nil {
		return n.fail(inv, errors.New("AG-UI agents do not run on a durable engine yet"), "unsupported")
	}
	rctx := ctx
	if n.cfg.Timeout > 0 {
		var cancel context.CancelFunc
		rctx, cancel = context.WithTimeoutCause(ctx, n.cfg.Timeout, fmt.Errorf("%w: agent %s took longer than its timeout (%s)", spawn.ErrTimeout, n.cfg.Name, n.cfg.Timeout))
		defer cancel()
	}
	if err := n.ensureServer(rctx); err != nil {
		if rctx.Err() != nil {
			return n.abort(inv, context.Cause(rctx))
		}
		return n.fail(inv, fmt.Errorf("agent %s: %w", n.cfg.Name, err), "agent_start")
	}
	n.store(ctx, inv, model.UserText(inv.Prompt))
	in := &runInput{
		ThreadID: ThreadID(inv.Session.ID), RunID: inv.RunID, State: json.RawMessage("{}"),
		Messages: []inputMessage{{ID: id.Ascending(id.Message), Role: "user", Content: inv.Prompt}},
		Tools:    []any{}, Context: []any{}, ForwardedProps: json.RawMessage("{}"),
	}
	t := &turn{n: n, inv: inv, calls: map[string]*call{}}
	var streamErr error
	for ev, err := range run(rctx, n.cfg.HTTPClient, n.cfg.Endpoint, n.cfg.Headers, in) {
		if err != nil {
			streamErr = err
			break
		}
		if t.apply(ev) {
			break
		}
	}
	t.closeText()
	t.endCalls()
	if rctx.Err() != nil {
		return n.abort(inv, context.Cause(rctx))
	}
	switch {
	case streamErr != nil:
		return n.fail(inv, fmt.Errorf("agent %s: %w", n.cfg.Name, streamErr), "agent_error")
	case t.errMsg != "":
		return n.fail(inv, fmt.Errorf("agent %s: %s", n.cfg.Name, t.errMsg), "agent_error")
	case !t.finished:
		return n.fail(inv, fmt.Errorf("agent %s: the stream ended before its run did", n.cfg.Name), "agent_error")
	}
	out := t.answer()
	reply := model.Message{Role: model.RoleAssistant, Parts: []model.Part{{Kind: model.PartText, Text: out}}}
	n.store(ctx, inv, reply)
	inv.Sink.Emit(event.StreamComplete{Message: event.Message{Role: "assistant", Content: out, Model: n.ModelID(), FinishReason: model.FinishStop}})
	return spawn.Result{Output: out, StopReason: event.StopCompleted, Messages: []model.Message{model.UserText(inv.Prompt), reply}}
}

// turn follows one remote run.
type turn struct {
	n        *Node
	inv      *spawn.Invocation
	open     bool            // the text part is open
	last     strings.Builder // the latest text message
	lastID   string
	cut      bool
	result   string // RUN_FINISHED's result, when a string
	finished bool
	errMsg   string
	calls    map[string]*call // announced, not yet answered
	order    []string
}

// call is a remote tool call.
type call struct {
	name    string
	args    strings.Builder
	started bool // tool_call_start emitted
}

// apply takes one event; true once the run has ended.
func (t *turn) apply(ev *wireEvent) bool {
	if ev.SubagentRunID != "" {
		return false // the remote's own delegations are not its answer
	}
	switch ev.Type {
	case "TEXT_MESSAGE_START":
		t.message(ev.MessageID)
	case "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_CHUNK":
		if ev.MessageID != "" && ev.MessageID != t.lastID {
			t.message(ev.MessageID)
		}
		t.text(ev.Delta)
	case "TOOL_CALL_START":
		t.closeText()
		if _, dup := t.calls[ev.ToolCallID]; !dup {
			t.calls[ev.ToolCallID] = &call{name: ev.ToolCallName}
			t.order = append(t.order, ev.ToolCallID)
		}
	case "TOOL_CALL_ARGS", "TOOL_CALL_CHUNK":
		if c := t.calls[ev.ToolCallID]; c != nil && c.args.Len()+len(ev.Delta) <= maxToolText {
			c.args.WriteString(ev.Delta)
		}
	case "TOOL_CALL_END":
		if c := t.calls[ev.ToolCallID]; c != nil {
			t.start(ev.ToolCallID, c)
		}
	case "TOOL_CALL_RESULT":
		if c := t.calls[ev.ToolCallID]; c != nil {
			t.start(ev.ToolCallID, c)
			t.complete(ev.ToolCallID, c, bound(ev.contentText(), maxToolText), false)
		}
	case "RUN_FINISHED":
		t.finished = true
		if s, ok := ev.Result.(string); ok {
			t.result = s
		}
		if ev.Outcome == "cancelled" {
			t.errMsg = "its run was cancelled"
		}
		return true
	case "RUN_ERROR":
		t.errMsg = ev.Message
		if t.errMsg == "" {
			t.errMsg = "its run failed (" + ev.Code + ")"
		}
		return true
	}
	return false
}

// message starts a new text message: the answer is the latest one.
func (t *turn) message(mid string) {
	if t.last.Len() > 0 {
		t.text("\n\n")
	}
	t.lastID, t.cut = mid, false
	t.last.Reset()
}

// text streams s on the delegation's text part and keeps it, within
// MaxOutputBytes.
func (t *turn) text(s string) {
	if s == "" {
		return
	}
	if !t.open {
		t.open = true
		t.inv.Sink.Emit(event.PartStart{Index: 0, Part: event.Part{PartKind: event.PartText}})
	}
	t.inv.Sink.Emit(event.PartDelta{Index: 0, Delta: event.Delta{PartDeltaKind: event.PartText, ContentDelta: s}})
	if room := t.n.cfg.MaxOutputBytes - t.last.Len(); len(s) > room {
		if !t.cut {
			t.cut = true
			t.last.WriteString(s[:max(room, 0)])
			fmt.Fprintf(&t.last, "\n[answer cut at %d bytes]", t.n.cfg.MaxOutputBytes)
		}
		return
	}
	t.last.WriteString(s)
}

func (t *turn) closeText() {
	if t.open {
		t.open = false
		t.inv.Sink.Emit(event.PartEnd{Index: 0})
	}
}

func (t *turn) start(tid string, c *call) {
	if c.started {
		return
	}
	c.started = true
	t.inv.Sink.Emit(event.ToolCallStart{ToolCallID: tid, ToolName: c.name, Title: c.name, RawInput: c.input()})
}

func (t *turn) complete(tid string, c *call, result string, isErr bool) {
	delete(t.calls, tid)
	t.inv.Sink.Emit(event.ToolCallComplete{ToolCallID: tid, ToolName: c.name, ToolInput: c.input(), ToolResult: result, IsError: isErr, AgentName: t.n.cfg.Name})
}

// endCalls completes the calls the remote left without a result.
func (t *turn) endCalls() {
	for _, tid := range t.order {
		if c := t.calls[tid]; c != nil {
			t.start(tid, c)
			t.complete(tid, c, "the remote agent gave no result for this call", true)
		}
	}
}

// input is the call's arguments: their JSON, or the text as a JSON string.
func (c *call) input() json.RawMessage {
	s := c.args.String()
	if s == "" {
		return json.RawMessage("{}")
	}
	if json.Valid([]byte(s)) {
		return json.RawMessage(s)
	}
	b, _ := json.Marshal(s)
	return b
}

// answer is RUN_FINISHED's result, else the latest text message.
func (t *turn) answer() string {
	if t.result != "" {
		return bound(t.result, t.n.cfg.MaxOutputBytes)
	}
	return t.last.String()
}

func bound(s string, n int) string {
	if len(s) > n {
		return s[:n] + fmt.Sprintf("\n[cut at %d bytes]", n)
	}
	return s
}

// store keeps a message of the child's conversation (its transcript).
func (n *Node) store(ctx context.Context, inv *spawn.Invocation, m model.Message) {
	member.Store(ctx, inv, n.cfg.Name, n.cfg.Logger, m)
}

func (n *Node) fail(inv *spawn.Invocation, err error, code string) spawn.Result {
	return member.Fail(inv, n.cfg.Name, err, code)
}

func (n *Node) abort(inv *spawn.Invocation, cause error) spawn.Result {
	return member.Abort(inv, n.cfg.Name, cause)
}
