package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/id"
	"github.com/agentpool/agentpool/internal/detach"
	"github.com/agentpool/agentpool/model"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/spawn"
	"github.com/agentpool/agentpool/tool"
)

// DefaultMaxTurns bounds the model requests of one run when none is set.
const DefaultMaxTurns = 25

// ErrMaxTurns ends a run that used all its turns.
var ErrMaxTurns = errors.New("max_turns reached")

// ErrStore ends a run whose conversation could not be stored.
var ErrStore = errors.New("store messages")

// Config configures an Agent.
type Config struct {
	Name         string
	Description  string
	SystemPrompt string
	Model        model.Model
	Tools        []tool.Tool
	// Toolsets are tools known at run time (MCP servers): asked for their
	// tools when a run starts; one that fails costs the run its tools and
	// is reported as a toolset_error custom event.
	Toolsets []tool.Toolset
	MaxTurns int
	Hooks    Hooks // optional interception points; nil means none
}

// Agent is an immutable agent definition.
type Agent struct {
	cfg   Config
	tools map[string]tool.Tool
	specs []model.ToolSpec
}

var _ spawn.Node = (*Agent)(nil)

// New builds an agent. Tool names must be unique.
func New(cfg Config) (*Agent, error) {
	if cfg.Name == "" {
		return nil, errors.New("agent: name is required")
	}
	if cfg.Model == nil {
		return nil, fmt.Errorf("agent %s: model is required", cfg.Name)
	}
	if cfg.MaxTurns <= 0 {
		cfg.MaxTurns = DefaultMaxTurns
	}
	a := &Agent{cfg: cfg, tools: map[string]tool.Tool{}}
	for _, t := range cfg.Tools {
		info := t.Info()
		if _, dup := a.tools[info.Name]; dup {
			return nil, fmt.Errorf("agent %s: duplicate tool %q", cfg.Name, info.Name)
		}
		a.tools[info.Name] = t
		a.specs = append(a.specs, toolSpec(info))
	}
	return a, nil
}

// EventToolsetError is the custom event type of a toolset that could not
// give its tools to a run (event_data: toolset, error).
const EventToolsetError = "toolset_error"

// toolsFor returns the tools of a run under ctx: the agent's own, the tools
// of its toolsets, and the extra tools the context carries (tool.WithExtra),
// each name once (the first wins).
func (a *Agent) toolsFor(ctx context.Context, sink event.Sink) (map[string]tool.Tool, []model.ToolSpec) {
	extra := tool.ExtraFrom(ctx)
	for _, ts := range append(a.cfg.Toolsets[:len(a.cfg.Toolsets):len(a.cfg.Toolsets)], tool.ToolsetsFrom(ctx)...) {
		got, err := ts.Tools(ctx)
		if err != nil {
			sink.Emit(event.Custom{EventType: EventToolsetError, Source: "agent", EventData: map[string]any{
				"agent": a.cfg.Name, "toolset": ts.Name(), "error": err.Error(),
			}})
			continue
		}
		extra = append(got[:len(got):len(got)], extra...)
	}
	if len(extra) == 0 {
		return a.tools, a.specs
	}
	tools := make(map[string]tool.Tool, len(a.tools)+len(extra))
	for k, v := range a.tools {
		tools[k] = v
	}
	specs := slices.Clip(a.specs)
	for _, t := range extra {
		info := t.Info()
		if _, dup := tools[info.Name]; dup {
			continue
		}
		tools[info.Name] = t
		specs = append(specs, toolSpec(info))
	}
	return tools, specs
}

func toolSpec(info tool.Info) model.ToolSpec {
	params := info.Parameters
	if len(params) == 0 {
		params = json.RawMessage(`{"type":"object","properties":{}}`)
	}
	return model.ToolSpec{Name: info.Name, Description: info.Description, Parameters: params}
}

// Name implements spawn.Node.
func (a *Agent) Name() string { return a.cfg.Name }

// Description implements spawn.Node.
func (a *Agent) Description() string { return a.cfg.Description }

// SourceType implements spawn.Node.
func (a *Agent) SourceType() string { return event.SourceAgent }

// ModelID implements spawn.Node.
func (a *Agent) ModelID() string { return a.cfg.Model.ID() }

// Model returns the agent's model.
func (a *Agent) Model() model.Model { return a.cfg.Model }

// ToolNames lists the agent's tools.
func (a *Agent) ToolNames() []string {
	out := make([]string, 0, len(a.specs))
	for _, s := range a.specs {
		out = append(out, s.Name)
	}
	return out
}

// run is the state of one run; it never outlives Run.
type run struct {
	a     *Agent
	inv   *spawn.Invocation
	sink  event.Sink
	mu    sync.Mutex
	msgs  []model.Message // the conversation so far
	added int             // msgs[added:] ... index where this run's messages start
	usage event.Usage
	cost  float64
	// persistCtx stores messages even after cancellation: what happened
	// before the cancel is kept.
	persistCtx context.Context
	// storeErr is the first failed write of the conversation; the run ends
	// with it at its next step (only the run's own goroutine appends).
	storeErr error
	// stored is append's buffer of store records (the store copies them);
	// appends are of one message but for injected batches.
	stored [1]session.Message
	turn   turnState // the model response being streamed
	// tools and specs are the agent's, or, when the run's context carries
	// extra tools (tool.WithExtra), the agent's plus those.
	tools map[string]tool.Tool
	specs []model.ToolSpec
}

// running maps the invocation of every agent run in progress to its run,
// so that the run's tools can reach its conversation (HistoryFrom).
var running struct {
	sync.Mutex
	runs map[*spawn.Invocation]*run
}

func (r *run) start() {
	running.Lock()
	if running.runs == nil {
		running.runs = map[*spawn.Invocation]*run{}
	}
	running.runs[r.inv] = r
	running.Unlock()
}

func (r *run) end() {
	running.Lock()
	delete(running.runs, r.inv)
	running.Unlock()
}

// HistoryFrom returns a copy of the conversation of the agent run that ctx
// belongs to (for workers with pass_message_history), or nil.
func HistoryFrom(ctx context.Context) []model.Message {
	inv := spawn.InvocationFrom(ctx)
	if inv == nil {
		return nil
	}
	running.Lock()
	r := running.runs[inv]
	running.Unlock()
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.msgs)
}

func (r *run) append(ctx context.Context, msgs ...model.Message) {
	r.mu.Lock()
	r.msgs = append(r.msgs, msgs...)
	r.mu.Unlock()
	st := r.inv.Runtime.Store()
	if st == nil {
		return
	}
	// The store copies what it keeps (session.Store), so one buffer serves
	// every append of the run.
	stored := r.stored[:0]
	if len(msgs) > len(r.stored) {
		stored = make([]session.Message, 0, len(msgs))
	}
	now := time.Now()
	for _, m := range msgs {
		stored = append(stored, session.Message{ID: id.AscendingAt(id.Message, now), SessionID: r.inv.Session.ID, AgentName: r.a.cfg.Name, CreatedAt: now, Message: m})
	}
	err := st.AppendMessages(r.persistCtx, r.inv.Session.ID, stored...)
	clear(stored)
	if err != nil {
		r.inv.Runtime.Logger().Warn("store messages", "session", r.inv.Session.ID, "err", err)
		if r.storeErr == nil {
			r.storeErr = err
		}
	}
}

// snapshot returns the conversation for a model request without copying:
// messages are never changed once appended, and the full slice expression
// keeps a model (or hook) that appends to the request from writing into
// the run's backing array.
func (r *run) snapshot() []model.Message {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.msgs[:len(r.msgs):len(r.msgs)]
}

// Run implements spawn.Node.
func (a *Agent) Run(ctx context.Context, inv *spawn.Invocation) (res spawn.Result) {
	// Room for the prompt and a tool round trip without growing.
	msgs := make([]model.Message, len(inv.History), len(inv.History)+4)
	copy(msgs, inv.History)
	r := &run{a: a, inv: inv, sink: inv.Sink, msgs: msgs, added: len(msgs), persistCtx: detach.Context(ctx)}
	if spawn.InvocationFrom(ctx) != inv {
		ctx = spawn.WithInvocation(ctx, inv)
	}
	r.start()
	defer func() {
		res.Usage, res.Cost = r.usage, r.cost
		// No copy: messages are never changed once appended and nothing
		// appends after Run returns; the clipped capacity keeps a caller's
		// append from writing into the run's array.
		r.mu.Lock()
		res.Messages = r.msgs[r.added:len(r.msgs):len(r.msgs)]
		r.mu.Unlock()
		// Async children must end before this session does (their events
		// belong inside this session's span).
		inv.WaitAsync()
		r.end()
	}()

	r.sink.Emit(event.RunStarted{SessionID: inv.Session.ID, RunID: inv.RunID, AgentName: a.cfg.Name, ParentSessionID: inv.Session.ParentID})
	r.tools, r.specs = a.toolsFor(ctx, r.sink)

	prompt := inv.Prompt
	if h := a.cfg.Hooks; h != nil && prompt != "" {
		d := h.PromptSubmit(ctx, PromptInfo{Agent: a.cfg.Name, SessionID: inv.Session.ID, Content: prompt})
		if d.Block {
			return r.fail(ctx, fmt.Errorf("prompt blocked: %s", d.Reason), event.StopError, "blocked")
		}
		if d.Context != "" {
			inv.Inject(d.Context)
		}
	}
	if prompt != "" {
		r.append(ctx, model.UserText(prompt))
	}
	finalText := ""
	var lastFinish string
	for turn := 1; ; turn++ {
		if err := context.Cause(ctx); err != nil {
			return r.abort(ctx, err)
		}
		if r.storeErr != nil {
			// The conversation can no longer be kept: stop rather than run
			// on with a history that a resumed session would not have.
			return r.fail(ctx, fmt.Errorf("%w: %w", ErrStore, r.storeErr), event.StopError, "store_error")
		}
		if turn > a.cfg.MaxTurns {
			return r.fail(ctx, fmt.Errorf("%w (%d)", ErrMaxTurns, a.cfg.MaxTurns), event.StopError, "max_turns")
		}
		r.drainInbox(ctx)
		req := &model.Request{System: a.cfg.SystemPrompt, Messages: r.snapshot(), Tools: r.specs}
		if h := a.cfg.Hooks; h != nil {
			req = h.ModelRequest(ctx, a.cfg.Name, inv.Session.ID, req)
		}
		msg, finish, err := r.streamTurn(ctx, req)
		if err != nil {
			if ctx.Err() != nil {
				return r.abort(ctx, context.Cause(ctx))
			}
			return r.fail(ctx, fmt.Errorf("model %s: %w", a.cfg.Model.ID(), err), event.StopError, "model_error")
		}
		r.append(ctx, msg)
		lastFinish = finish
		calls := msg.ToolCalls()
		if len(calls) == 0 {
			finalText = msg.Text()
			// Background children still running, or results already
			// delivered: the model gets another turn to see them.
			if r.waitInjected(ctx) {
				continue
			}
			if ctx.Err() != nil {
				return r.abort(ctx, context.Cause(ctx))
			}
			if h := a.cfg.Hooks; h != nil {
				if d := h.TurnStop(ctx, TurnStopInfo{Agent: a.cfg.Name, SessionID: inv.Session.ID, FinalMessage: finalText}); d.Continue {
					r.append(ctx, model.Message{Role: model.RoleUser, Parts: []model.Part{{Kind: model.PartText, Text: d.Reason}}, Synthetic: true})
					continue
				}
			}
			break
		}
		results := r.runTools(ctx, calls)
		r.append(ctx, model.Message{Role: model.RoleTool, Parts: results})
	}
	if r.storeErr != nil {
		return r.fail(ctx, fmt.Errorf("%w: %w", ErrStore, r.storeErr), event.StopError, "store_error")
	}
	stop := event.StopCompleted
	switch lastFinish {
	case model.FinishLength:
		stop = event.StopMaxTokens
	case model.FinishRefusal:
		stop = event.StopRefusal
	}
	r.sink.Emit(event.StreamComplete{Message: event.Message{
		Role: "assistant", Content: finalText, Usage: r.usage, Cost: r.cost, Model: a.cfg.Model.ID(), FinishReason: lastFinish,
	}})
	return spawn.Result{Output: finalText, StopReason: stop}
}

// waitInjected reports whether the model should get another turn because
// injected context is waiting, blocking while async children still run.
func (r *run) waitInjected(ctx context.Context) bool {
	inbox := r.inv.Inbox()
	for {
		if inbox.Len() > 0 {
			return true
		}
		if r.inv.PendingAsync() == 0 {
			// A child injects before its pending count drops: one that
			// ended since the check above is seen here.
			return inbox.Len() > 0
		}
		// Woken by an injection or by an async child ending.
		select {
		case <-inbox.Wait():
		case <-ctx.Done():
			return false
		}
	}
}

func (r *run) drainInbox(ctx context.Context) {
	items := r.inv.Injected()
	if len(items) == 0 {
		return
	}
	msgs := make([]model.Message, len(items))
	for i, c := range items {
		msgs[i] = model.Message{Role: model.RoleUser, Parts: []model.Part{{Kind: model.PartText, Text: c}}, Synthetic: true}
	}
	r.append(ctx, msgs...)
}

func (r *run) fail(ctx context.Context, err error, stop, code string) spawn.Result {
	// The run's error is the last event of its session: async children
	// (whose ends belong to this session) must end before it.
	r.inv.WaitAsync()
	r.sink.Emit(event.RunError{Message: err.Error(), Code: code, RunID: r.inv.RunID, AgentName: r.a.cfg.Name})
	return spawn.Result{Output: r.lastText(), StopReason: stop, Err: err}
}

func (r *run) abort(ctx context.Context, cause error) spawn.Result {
	if cause == nil {
		cause = context.Canceled
	}
	r.inv.WaitAsync() // see fail
	msg, code := "run cancelled: ", "aborted"
	if errors.Is(cause, spawn.ErrTimeout) {
		// The spawn's own timeout: an error, not a cancellation.
		msg, code = "run timed out: ", "timeout"
	}
	r.sink.Emit(event.RunError{Message: msg + cause.Error(), Code: code, RunID: r.inv.RunID, AgentName: r.a.cfg.Name})
	return spawn.Result{Output: r.lastText(), StopReason: event.StopAborted, Err: cause}
}

func (r *run) lastText() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := len(r.msgs) - 1; i >= r.added; i-- {
		if r.msgs[i].Role == model.RoleAssistant {
			if t := r.msgs[i].Text(); t != "" {
				return t
			}
		}
	}
	return ""
}

// streamTurn runs one model request, emitting part events, and returns the
// assistant message.
func (r *run) streamTurn(ctx context.Context, req *model.Request) (model.Message, string, error) {
	r.turn = turnState{sink: r.sink, open: -1}
	t := &r.turn
	t.consume(r.a.cfg.Model.Stream(ctx, req))
	t.closeOpen()
	r.usage.Add(t.usage)
	r.cost += model.Cost(r.a.cfg.Model, t.usage)
	if t.err != nil {
		return model.Message{}, "", t.err
	}
	return t.message()
}

// turnState accumulates one model response.
type turnState struct {
	sink      event.Sink
	text      textAcc
	thinking  textAcc
	open      int    // index of the open part, -1 when none
	openKind  string // kind of the open part
	nextIndex int    // next part index
	calls     []callState
	usage     event.Usage
	finish    string
	err       error // the stream's error
}

type callState struct {
	modelIndex int // the provider's index of the call
	partIndex  int // the event part index
	part       model.Part
	args       textAcc
}

// textAcc accumulates streamed text. Most parts arrive in one chunk, kept
// as it came; a buffer is made only for the second chunk.
type textAcc struct {
	first string
	buf   []byte
	n     int
}

func (a *textAcc) WriteString(s string) {
	switch {
	case s == "":
		return
	case a.n == 0:
		a.first = s
	default:
		if a.buf == nil {
			a.buf = make([]byte, 0, 2*(a.n+len(s)))
			a.buf = append(a.buf, a.first...)
		}
		a.buf = append(a.buf, s...)
	}
	a.n += len(s)
}

func (a *textAcc) Len() int { return a.n }

func (a *textAcc) String() string {
	if a.buf == nil {
		return a.first
	}
	return string(a.buf)
}

// Bytes returns the text as a new slice the caller may keep.
func (a *textAcc) Bytes() []byte {
	if a.buf == nil {
		return []byte(a.first)
	}
	return a.buf
}

// consume takes the chunks of the model's stream; an error ends it.
func (t *turnState) consume(stream iter.Seq2[model.Chunk, error]) {
	defer func() {
		// A stream that goes on yielding after its error breaks the
		// iterator contract, and Go stops it with a panic; the turn ends
		// with the error it had yielded.
		if t.err != nil {
			_ = recover()
		}
	}()
	for c, err := range stream {
		if err != nil {
			t.err = err
			return
		}
		t.chunk(c)
	}
}

func (t *turnState) closeOpen() {
	if t.open >= 0 {
		t.sink.Emit(event.PartEnd{Index: t.open})
		t.open, t.openKind = -1, ""
	}
}

func (t *turnState) chunk(c model.Chunk) {
	switch c.Kind {
	case model.ChunkText, model.ChunkThinking:
		if c.Text == "" {
			return
		}
		kind, buf := event.PartText, &t.text
		if c.Kind == model.ChunkThinking {
			kind, buf = event.PartThinking, &t.thinking
		}
		if t.openKind != kind {
			t.closeOpen()
			t.open, t.openKind = t.nextIndex, kind
			t.nextIndex++
			t.sink.Emit(event.PartStart{Index: t.open, Part: event.Part{PartKind: kind}})
		}
		buf.WriteString(c.Text)
		t.sink.Emit(event.PartDelta{Index: t.open, Delta: event.Delta{PartDeltaKind: kind, ContentDelta: c.Text}})
	case model.ChunkToolCall:
		k := -1
		for i := range t.calls {
			if t.calls[i].modelIndex == c.Index {
				k = i
				break
			}
		}
		if k < 0 {
			t.closeOpen()
			callID := c.ToolCallID
			if callID == "" {
				callID = id.Ascending(id.ToolCall)
			}
			k = len(t.calls)
			t.calls = append(t.calls, callState{modelIndex: c.Index, partIndex: t.nextIndex,
				part: model.Part{Kind: model.PartToolCall, ToolCallID: callID, ToolName: c.ToolName}})
			t.open, t.openKind = t.nextIndex, event.PartToolCall
			t.nextIndex++
			t.sink.Emit(event.PartStart{Index: t.open, Part: event.Part{PartKind: event.PartToolCall, ToolCallID: callID, ToolName: c.ToolName}})
		} else if c.ToolName != "" && t.calls[k].part.ToolName == "" {
			t.calls[k].part.ToolName = c.ToolName
		}
		if c.ArgsDelta != "" {
			cs := &t.calls[k]
			cs.args.WriteString(c.ArgsDelta)
			t.sink.Emit(event.PartDelta{Index: cs.partIndex, Delta: event.Delta{PartDeltaKind: event.PartToolCall, ArgsDelta: c.ArgsDelta, ToolCallID: cs.part.ToolCallID}})
		}
	case model.ChunkUsage:
		t.usage = c.Usage
	case model.ChunkFinish:
		t.finish = c.FinishReason
	}
}

// message assembles the assistant message: thinking, text, then tool calls.
func (t *turnState) message() (model.Message, string, error) {
	n := len(t.calls)
	if t.thinking.Len() > 0 {
		n++
	}
	if t.text.Len() > 0 {
		n++
	}
	parts := make([]model.Part, 0, n)
	if t.thinking.Len() > 0 {
		parts = append(parts, model.Part{Kind: model.PartThinking, Text: t.thinking.String()})
	}
	if t.text.Len() > 0 {
		parts = append(parts, model.Part{Kind: model.PartText, Text: t.text.String()})
	}
	for k := range t.calls {
		args := t.calls[k].args.Bytes()
		if len(bytes.TrimSpace(args)) == 0 {
			args = []byte("{}")
		}
		p := t.calls[k].part
		p.Args = args
		parts = append(parts, p)
	}
	finish := t.finish
	if finish == "" {
		finish = model.FinishStop
		if len(t.calls) > 0 {
			finish = model.FinishToolCalls
		}
	}
	return model.Message{Role: model.RoleAssistant, Parts: parts}, finish, nil
}

// runTools runs the calls of one response, concurrently when there are
// several, and returns their results in call order.
func (r *run) runTools(ctx context.Context, calls []model.Part) []model.Part {
	results := make([]model.Part, len(calls))
	if len(calls) == 1 {
		results[0] = r.runTool(ctx, calls[0])
		return results
	}
	var wg sync.WaitGroup
	for i, c := range calls {
		wg.Go(func() { results[i] = r.runTool(ctx, c) })
	}
	wg.Wait()
	return results
}

func (r *run) runTool(ctx context.Context, c model.Part) model.Part {
	raw := c.Args
	if !json.Valid(raw) {
		// Keep the wire valid: an unparsable argument string travels as a
		// JSON string.
		b, _ := json.Marshal(string(raw))
		raw = b
	}
	call := tool.Call{ID: c.ToolCallID, Name: c.ToolName, Args: raw, SessionID: r.inv.Session.ID}
	t, ok := r.tools[c.ToolName]
	title, kind := c.ToolName, tool.KindOther
	var locs []tool.Location
	if ok {
		title = tool.Title(t, call)
		if k := t.Info().Kind; k != "" {
			kind = k
		}
		locs = tool.Locations(t, call)
	}
	r.sink.Emit(event.ToolCallStart{ToolCallID: c.ToolCallID, ToolName: c.ToolName, Title: title, ToolKind: kind, RawInput: raw, Locations: locs})
	var res tool.Result
	switch {
	case !ok:
		names := make([]string, len(r.specs))
		for i, s := range r.specs {
			names[i] = s.Name
		}
		res = tool.Errorf("unknown tool %q; available tools: %s", c.ToolName, strings.Join(names, ", "))
	default:
		res = r.execute(ctx, t, call)
	}
	r.sink.Emit(event.ToolCallComplete{ToolCallID: c.ToolCallID, ToolName: c.ToolName, ToolInput: raw, ToolResult: res.Content, IsError: res.IsError, AgentName: r.a.cfg.Name,
		Locations: res.Locations, Diffs: res.Diffs, Metadata: res.Metadata})
	return model.Part{Kind: model.PartToolResult, ToolCallID: c.ToolCallID, ToolName: c.ToolName, Text: res.Content, IsError: res.IsError}
}

// execute runs one tool through the hook seams.
func (r *run) execute(ctx context.Context, t tool.Tool, call tool.Call) tool.Result {
	h := r.a.cfg.Hooks
	if h == nil {
		return tool.Run(ctx, t, call)
	}
	info := ToolInfo{Agent: r.a.cfg.Name, SessionID: r.inv.Session.ID, ToolName: call.Name, CallID: call.ID, Input: slices.Clone(call.Args)}
	d := h.PreTool(ctx, info)
	if !d.Allow {
		return tool.Errorf("tool %s denied: %s", call.Name, d.Reason)
	}
	if len(d.Input) > 0 && json.Valid(d.Input) {
		call.Args = slices.Clone(d.Input)
		info.Input = slices.Clone(d.Input)
	}
	res := tool.Run(ctx, t, call)
	return h.PostTool(ctx, info, res)
}
