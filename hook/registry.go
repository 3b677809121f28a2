package hook

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"strings"
	"sync"
	"time"

	"github.com/agentpool/agentpool/agent"
	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/internal/durablewire"
	"github.com/agentpool/agentpool/model"
	"github.com/agentpool/agentpool/spawn"
	"github.com/agentpool/agentpool/tool"
)

// Options configure a Registry.
type Options struct {
	Logger *slog.Logger
	// EmitTimeout is the default per-listener timeout of emits
	// (DefaultEmitTimeout when 0).
	EmitTimeout time.Duration
}

// Registry holds every hook point of docs/spec/HOOKS.md §2 and the agents'
// tool_approval policies. It implements agent.Hooks and spawn.Lifecycle,
// and its SessionStart and SessionEnd are the root sessions' points;
//
//	pool.New(m, pool.Options{Hooks: reg})
//
// wires all of it into a pool. Register listeners before the first run; the
// points are safe for concurrent use.
type Registry struct {
	// OnSessionStart fires when a root run begins (pool.RunSink).
	OnSessionStart *Emit[SessionStart]
	// OnSessionEnd fires when a root run and all its children have ended.
	OnSessionEnd *Emit[SessionEnd]
	// OnPromptSubmit may block a prompt or add context to it.
	OnPromptSubmit *Seam[Prompt, PromptDecision]
	// OnRequest may change the model request about to be sent.
	OnRequest *Seam[ModelRequest, *model.Request]
	// OnPreExecute decides whether a tool call runs: allow, deny, or ask
	// (which goes to OnApproval). Its default is the agent's tool_approval
	// policy from the manifest (allow when there is none).
	OnPreExecute *Seam[ToolCall, agent.ToolDecision]
	// OnPostExecute sees a tool's result and may add feedback or context.
	OnPostExecute *Seam[ToolOutcome, PostDecision]
	// OnToolResult observes every finished tool call.
	OnToolResult *Emit[ToolOutcome]
	// OnTurnStop may make an agent (or a subagent) continue.
	OnTurnStop *Seam[TurnStop, StopDecision]
	// OnPreCompact fires before older turns of a conversation are
	// summarised.
	OnPreCompact *Emit[PreCompact]
	// OnApproval answers approval requests. Fail closed: with no listener, or
	// no answer, the outcome is Unavailable and the tool is denied.
	OnApproval *Seam[ApprovalRequest, ApprovalDecision]
	// OnSubagentStart fires once a child is ready, before its first model
	// request.
	OnSubagentStart *Emit[SubagentStart]
	// OnSubagentEnd fires exactly once per started child, after it settled.
	OnSubagentEnd *Emit[SubagentEnd]

	// Approvals are the agents' tool_approval policies, the default of
	// OnPreExecute, and the "allow always" answers of the sessions.
	Approvals *ToolApprovals

	core  *core
	calls callClock    // when each allowed tool call started (PostTool's duration)
	kept  keptSessions // root sessions kept open across runs (keep.go)

	mu       sync.Mutex // guards closers and shellEnv, what listeners leave to the registry
	closers  []func(context.Context) error
	shellEnv func(context.Context) string // SetShellEnvFile
}

var (
	_ agent.Hooks        = (*Registry)(nil)
	_ agent.CompactHooks = (*Registry)(nil)
	_ spawn.Lifecycle    = (*Registry)(nil)
)

// The names of the hook points.
const (
	PointSessionStart  = "session/start"
	PointSessionEnd    = "session/end"
	PointPromptSubmit  = "agent/prompt-submit"
	PointRequest       = "agent/request"
	PointPreExecute    = "tools/pre-execute"
	PointPostExecute   = "tools/post-execute"
	PointToolResult    = "tools/result"
	PointTurnStop      = "agent/turn-stop"
	PointPreCompact    = "agent/pre-compact"
	PointApproval      = "approval/request"
	PointSubagentStart = "subagent/start"
	PointSubagentEnd   = "subagent/end"
)

func one(s string) []string { return []string{s} }

// New returns an empty registry.
func New(opts Options) *Registry {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.EmitTimeout <= 0 {
		opts.EmitTimeout = DefaultEmitTimeout
	}
	c := &core{log: opts.Logger, timeout: opts.EmitTimeout}
	r := &Registry{Approvals: newToolApprovals(), core: c}
	c.fault = recordFault
	r.OnSessionStart = &Emit[SessionStart]{name: PointSessionStart, core: c,
		agents: func(p SessionStart) []string { return one(p.Agent) }}
	r.OnSessionEnd = &Emit[SessionEnd]{name: PointSessionEnd, core: c,
		agents: func(p SessionEnd) []string { return one(p.Agent) }}
	r.OnPromptSubmit = &Seam[Prompt, PromptDecision]{name: PointPromptSubmit, core: c,
		agents: func(p Prompt) []string { return one(p.Agent) }}
	r.OnRequest = &Seam[ModelRequest, *model.Request]{name: PointRequest, core: c,
		agents: func(p ModelRequest) []string { return one(p.Agent) }}
	r.OnPreExecute = &Seam[ToolCall, agent.ToolDecision]{name: PointPreExecute, core: c, clone: cloneToolCall,
		agents: func(p ToolCall) []string { return one(p.Agent) }}
	r.OnPostExecute = &Seam[ToolOutcome, PostDecision]{name: PointPostExecute, core: c, clone: cloneOutcome,
		agents: func(p ToolOutcome) []string { return one(p.Agent) }}
	r.OnToolResult = &Emit[ToolOutcome]{name: PointToolResult, core: c, clone: cloneOutcome,
		agents: func(p ToolOutcome) []string { return one(p.Agent) }}
	r.OnTurnStop = &Seam[TurnStop, StopDecision]{name: PointTurnStop, core: c,
		agents: func(p TurnStop) []string { return one(p.Agent) }}
	r.OnPreCompact = &Emit[PreCompact]{name: PointPreCompact, core: c,
		agents: func(p PreCompact) []string { return one(p.Agent) }}
	r.OnApproval = &Seam[ApprovalRequest, ApprovalDecision]{name: PointApproval, core: c, clone: cloneApproval,
		agents: func(p ApprovalRequest) []string { return one(p.Agent) }}
	r.OnSubagentStart = &Emit[SubagentStart]{name: PointSubagentStart, core: c,
		agents: func(p SubagentStart) []string { return one(p.ParentAgent) }}
	r.OnSubagentEnd = &Emit[SubagentEnd]{name: PointSubagentEnd, core: c, clone: r.cloneEnd,
		agents: func(p SubagentEnd) []string { return one(p.ParentAgent) }}
	return r
}

// EventHookError is the event_type of the custom event that records a
// skipped listener (a Fault: it panicked, failed or timed out) in the
// event log of the session the point fired for. Session-level points
// (session/start, session/end) fire outside the run's span: their faults
// go to the session's log in the store only, not to the live stream.
const EventHookError = "hook_error"

// recordFault records f for the session of ctx (a point fired outside any
// session is only logged).
func recordFault(ctx context.Context, f Fault) {
	inv := spawn.InvocationFrom(ctx)
	if inv == nil {
		return
	}
	e := event.Custom{EventType: EventHookError, Source: "hook", EventData: map[string]any{
		"point": f.Point, "listener": f.Listener, "kind": f.Kind, "error": f.Error,
	}}
	switch f.Point {
	case PointSessionStart, PointSessionEnd:
		inv.Record(e)
	default:
		if inv.Sink != nil {
			inv.Sink.Emit(e)
		}
	}
}

// Logger returns the registry's logger.
func (r *Registry) Logger() *slog.Logger { return r.core.logger() }

// AddCloser adds fn to what Close does (in reverse order of adding, before
// waiting for abandoned listeners): what a listener started that must end
// with the registry, such as the command bridge's background hooks and
// temporary transcripts.
func (r *Registry) AddCloser(fn func(context.Context) error) {
	r.mu.Lock()
	r.closers = append(r.closers, fn)
	r.mu.Unlock()
}

// SetShellEnvFile sets where the Bash tool finds the environment of the
// session a call runs in: fn(ctx of the tool call) names a shell file of
// export lines to source before the command, "" for none. Claude Code's
// SessionStart hooks write such a file (CLAUDE_ENV_FILE) and every later
// Bash command of the session sees its variables; package hook/command
// sets fn when SessionStart hooks are configured.
func (r *Registry) SetShellEnvFile(fn func(context.Context) string) {
	r.mu.Lock()
	r.shellEnv = fn
	r.mu.Unlock()
}

// ShellEnvFile is the file SetShellEnvFile's function names for a tool
// call's ctx ("" when none was set).
func (r *Registry) ShellEnvFile(ctx context.Context) string {
	r.mu.Lock()
	fn := r.shellEnv
	r.mu.Unlock()
	if fn == nil {
		return ""
	}
	return fn(ctx)
}

// Close runs the closers (AddCloser), then waits until every emit listener
// that was abandoned after its timeout has returned, or ctx is done.
func (r *Registry) Close(ctx context.Context) error {
	r.mu.Lock()
	closers := r.closers
	r.closers = nil
	r.mu.Unlock()
	var errs []error
	for i := len(closers) - 1; i >= 0; i-- {
		if err := closers[i](ctx); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	done := make(chan struct{})
	go func() {
		r.core.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// cloneEnd gives a subagent/end listener its own copy. A failing copy of
// last_assistant_message is logged and the event fires without the field.
func (r *Registry) cloneEnd(e SubagentEnd) (out SubagentEnd) {
	msg := e.LastAssistantMessage
	e.LastAssistantMessage = nil
	out = cloneSubagentEnd(e)
	if msg != nil {
		out.LastAssistantMessage = r.copyParts(msg)
	}
	return out
}

func (r *Registry) copyParts(p []model.Part) (out []model.Part) {
	defer func() {
		if v := recover(); v != nil {
			r.Logger().Error("copy of last_assistant_message failed; subagent/end fires without it", "panic", v)
			out = nil
		}
	}()
	return cloneParts(p)
}

// Inject queues content for the next model request of a running session of
// the runtime that ctx belongs to (ctx as given to any listener that runs
// inside a session: every point but a bare Registry call).
func Inject(ctx context.Context, sessionID, content string) error {
	inv := spawn.InvocationFrom(ctx)
	if inv == nil || inv.Runtime == nil {
		return ErrNoSession
	}
	return inv.Runtime.Inject(sessionID, content)
}

// --- agent.Hooks ---

// PromptSubmit implements agent.Hooks (agent/prompt-submit).
func (r *Registry) PromptSubmit(ctx context.Context, p agent.PromptInfo) agent.PromptDecision {
	in := Prompt{Agent: p.Agent, SessionID: p.SessionID, Content: p.Content}
	d := r.OnPromptSubmit.Run(ctx, in, func(context.Context, Prompt) PromptDecision { return PromptDecision{} })
	if d.Block && d.Reason == "" {
		d.Reason = "blocked by a hook"
	}
	return agent.PromptDecision{Block: d.Block, Reason: d.Reason, Context: d.Context}
}

// ModelRequest implements agent.Hooks (agent/request). The chain works on a
// deep copy of req; a listener returning nil keeps the request.
func (r *Registry) ModelRequest(ctx context.Context, agentName, sessionID string, req *model.Request) *model.Request {
	if r.OnRequest.Len() == 0 {
		return req
	}
	in := ModelRequest{Agent: agentName, SessionID: sessionID, Request: cloneRequest(req)}
	out := r.OnRequest.Run(ctx, in, func(_ context.Context, in ModelRequest) *model.Request { return in.Request })
	if out == nil {
		return req
	}
	return out
}

// PreTool implements agent.Hooks: tools/pre-execute, then approval/request
// when the answer is ask. It answers allow or deny only: an action other
// than allow, deny and ask denies, with a reason that names it.
func (r *Registry) PreTool(ctx context.Context, t agent.ToolInfo) agent.ToolDecision {
	in := ToolCall{Agent: t.Agent, SessionID: t.SessionID, ToolName: t.ToolName, CallID: t.CallID, Input: cloneRaw(t.Input)}
	d := r.OnPreExecute.Run(ctx, in, r.Approvals.preExecuteDefault)
	input := cloneRaw(d.UpdatedInput)
	switch d.Action {
	case "", agent.ToolAllow:
	case agent.ToolDeny:
		reason := d.Reason
		if reason == "" {
			reason = "denied by a hook"
		}
		return agent.ToolDecision{Action: agent.ToolDeny, Reason: reason}
	case agent.ToolAsk:
		asked := t.Input
		if len(d.UpdatedInput) > 0 {
			asked = d.UpdatedInput
		}
		req := ApprovalRequest{Agent: t.Agent, SessionID: t.SessionID, ToolName: t.ToolName, CallID: t.CallID, Input: asked, Reason: d.Reason}
		if t.Granted != "" && len(d.UpdatedInput) == 0 {
			break // approved already, as it is (ToolInfo.Granted)
		}
		a, deferred := r.ask(ctx, t, req, input, durablewire.ApprovalsDeferred(ctx))
		if deferred {
			// The run waits for the answer itself (a durable run): the
			// ask goes back to it with the input to run.
			return agent.ToolDecision{Action: agent.ToolAsk, Reason: d.Reason, UpdatedInput: cloneRaw(d.UpdatedInput)}
		}
		if a.Action != agent.ToolAllow {
			return a
		}
		input = a.UpdatedInput
	default:
		reason := fmt.Sprintf("a tools/pre-execute hook answered the unknown action %q (want %q, %q or %q)",
			d.Action, agent.ToolAllow, agent.ToolDeny, agent.ToolAsk)
		r.Logger().Warn("unknown tools/pre-execute action; the tool call is denied", "action", d.Action, "tool", t.ToolName, "agent", t.Agent)
		return agent.ToolDecision{Action: agent.ToolDeny, Reason: reason}
	}
	// The tool runs now: PostTool reports how long it took.
	r.calls.start(callKey{t.SessionID, t.CallID})
	return agent.ToolDecision{Action: agent.ToolAllow, UpdatedInput: input}
}

// PostTool implements agent.Hooks: tools/post-execute, then the tools/result
// emit.
func (r *Registry) PostTool(ctx context.Context, t agent.ToolInfo, res tool.Result) tool.Result {
	in := ToolOutcome{
		ToolCall: ToolCall{Agent: t.Agent, SessionID: t.SessionID, ToolName: t.ToolName, CallID: t.CallID, Input: cloneRaw(t.Input)},
		Result:   res.Content, IsError: res.IsError, Interrupted: ctx.Err() != nil,
	}
	if took, ok := r.calls.end(callKey{t.SessionID, t.CallID}); ok {
		in.DurationMS = took.Milliseconds()
	}
	d := r.OnPostExecute.Run(ctx, in, func(context.Context, ToolOutcome) PostDecision { return PostDecision{} })
	if d.Block {
		fb := d.Feedback
		if fb == "" {
			fb = "blocked by a hook"
		}
		if res.Content != "" {
			res.Content += "\n\n"
		}
		res.Content += "Hook feedback: " + fb
	}
	if d.Context != "" {
		if inv := spawn.InvocationFrom(ctx); inv != nil {
			inv.Inject(d.Context)
		}
	}
	in.Result, in.IsError = res.Content, res.IsError
	r.OnToolResult.Fire(ctx, in)
	return res
}

// TurnStop implements agent.Hooks (agent/turn-stop). Whether the session is
// a subagent comes from the invocation in ctx.
func (r *Registry) TurnStop(ctx context.Context, s agent.TurnStopInfo) agent.StopDecision {
	in := TurnStop{Agent: s.Agent, SessionID: s.SessionID, FinalMessage: s.FinalMessage}
	if inv := spawn.InvocationFrom(ctx); inv != nil && inv.Session.ID == s.SessionID {
		in.ParentSessionID, in.Depth = inv.Session.ParentID, inv.Session.Depth
	}
	d := r.OnTurnStop.Run(ctx, in, func(context.Context, TurnStop) StopDecision { return StopDecision{} })
	if d.Continue && strings.TrimSpace(d.Reason) == "" {
		d.Reason = "Continue."
	}
	return agent.StopDecision{Continue: d.Continue, Reason: d.Reason}
}

// PreCompact implements agent.CompactHooks (agent/pre-compact).
func (r *Registry) PreCompact(ctx context.Context, c agent.CompactInfo) {
	r.OnPreCompact.Fire(ctx, PreCompact{Agent: c.Agent, SessionID: c.SessionID, Trigger: c.Trigger, Instructions: c.Instructions})
}

// Quiet implements agent.QuietHooks: point (agent.Hook*) has no listener,
// so calling it runs only the registry's defaults (the tool_approval
// policy; an ask that no approver answers), which do no I/O.
func (r *Registry) Quiet(point string) bool {
	switch point {
	case agent.HookPromptSubmit:
		return r.OnPromptSubmit.Len() == 0
	case agent.HookModelRequest:
		return r.OnRequest.Len() == 0
	case agent.HookPreTool:
		return r.OnPreExecute.Len() == 0 && r.OnApproval.Len() == 0
	case agent.HookPostTool:
		return r.OnPostExecute.Len() == 0 && r.OnToolResult.Len() == 0
	case agent.HookTurnStop:
		return r.OnTurnStop.Len() == 0
	}
	return false
}

// --- spawn.Lifecycle ---

// SubagentStart implements spawn.Lifecycle (subagent/start).
func (r *Registry) SubagentStart(ctx context.Context, info spawn.StartInfo) {
	r.OnSubagentStart.Fire(ctx, SubagentStart{
		Provider: Provider, ID: info.ChildSessionID, ParentID: info.ParentSessionID, Name: info.Name,
		Depth: info.Depth, Mechanism: info.Mechanism, RunMode: info.RunMode, ParentAgent: info.ParentAgent,
	})
}

// SubagentEnd implements spawn.Lifecycle (subagent/end).
func (r *Registry) SubagentEnd(ctx context.Context, info spawn.EndInfo) {
	e := SubagentEnd{
		Provider: Provider, ID: info.ChildSessionID, ParentID: info.ParentSessionID, Name: info.Name,
		ParentAgent: info.ParentAgent, StopReason: info.StopReason, DurationMS: info.DurationMS,
	}
	if info.HasResult && info.LastAssistant != nil {
		// The registry's own copy; each listener gets a copy of it.
		e.LastAssistantMessage = r.copyParts(info.LastAssistant)
	}
	if !info.Usage.IsZero() {
		u := info.Usage
		e.Usage = &u
	}
	r.OnSubagentEnd.Fire(ctx, e)
}

// Points describes every hook point, in the order of docs/spec/HOOKS.md §2.
func Points() []PointInfo {
	return []PointInfo{
		{PointSessionStart, KindEmit, "A root session begins: a root run, or the first run of a session kept open across runs (RunRequest.KeepSession).", reflect.TypeFor[SessionStart](), nil},
		{PointSessionEnd, KindEmit, "A root session and all of its children have ended: at the end of its run, or when a session kept open is closed (EndSession).", reflect.TypeFor[SessionEnd](), nil},
		{PointPromptSubmit, KindSeam, "A prompt is about to be added to the conversation: allow (optionally with extra context) or block with a reason.", reflect.TypeFor[Prompt](), reflect.TypeFor[PromptDecision]()},
		{PointRequest, KindSeam, "A model request is about to be sent: return it, changed or not.", reflect.TypeFor[ModelRequest](), reflect.TypeFor[*model.Request]()},
		{PointPreExecute, KindSeam, "A tool call is about to run: allow, deny with a reason, or ask (approval/request). The default is the agent's tool_approval policy.", reflect.TypeFor[ToolCall](), reflect.TypeFor[agent.ToolDecision]()},
		{PointPostExecute, KindSeam, "A tool returned: accept (optionally with extra context) or block with feedback for the model.", reflect.TypeFor[ToolOutcome](), reflect.TypeFor[PostDecision]()},
		{PointToolResult, KindEmit, "A tool call finished (after tools/post-execute).", reflect.TypeFor[ToolOutcome](), nil},
		{PointTurnStop, KindSeam, "The model answered without tool calls: stop, or continue with a reason (the next user message).", reflect.TypeFor[TurnStop](), reflect.TypeFor[StopDecision]()},
		{PointPreCompact, KindEmit, "Older turns of a session's conversation are about to be summarised into one message: trigger auto (the next request neared the model's context window) or manual.", reflect.TypeFor[PreCompact](), nil},
		{PointApproval, KindSeam, "A tool call needs approval. Fail closed: no listener or no answer is unavailable, which denies.", reflect.TypeFor[ApprovalRequest](), reflect.TypeFor[ApprovalDecision]()},
		{PointSubagentStart, KindEmit, "A child session is ready (stored, registered, injectable) and has not made its first model request.", reflect.TypeFor[SubagentStart](), nil},
		{PointSubagentEnd, KindEmit, "A started child settled; exactly once per child.", reflect.TypeFor[SubagentEnd](), nil},
	}
}
