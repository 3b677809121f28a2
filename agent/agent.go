package agent

import (
	"context"
	"errors"
	"fmt"
	"slices"
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

// DefaultMaxResponseBytes bounds one model response when no bound is
// set: 16 MiB of text, thinking and tool call arguments.
const DefaultMaxResponseBytes = 16 << 20

// ErrResponseTooLarge ends a run whose model sent a response larger than
// its MaxResponseBytes.
var ErrResponseTooLarge = errors.New("model response too large")

// DefaultMaxToolCallsPerTurn bounds the tool calls of one model response
// that run when no bound is set (see Config.MaxToolCallsPerTurn).
const DefaultMaxToolCallsPerTurn = 64

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
	// MaxResponseBytes bounds one model response: its text, thinking and
	// tool call arguments together (DefaultMaxResponseBytes when <= 0). A
	// response that passes it ends the run with ErrResponseTooLarge at
	// once, without reading the rest: what a response costs in memory
	// (kept text, events, stored messages) is a multiple of its size, so a
	// model that never stops must not be followed to the end.
	MaxResponseBytes int
	// MaxToolCallsPerTurn bounds the tool calls of one model response
	// that run (DefaultMaxToolCallsPerTurn when <= 0): the calls of a
	// response run at once, each a goroutine and maybe a process or a
	// child session. Later calls are not run; each gets an error result
	// the model reads ("tool call limit per turn (N) reached: ...").
	MaxToolCallsPerTurn int
	Hooks               Hooks // optional interception points; nil means none
	// ContextWindow is the model's context window in tokens; 0: the
	// model's own (model.ContextWindowOf), and when it knows none the
	// run does not compact (compact.go).
	ContextWindow int
	// CompactThreshold is the share of the context window a request may
	// fill before older turns are summarised (DefaultCompactThreshold
	// when <= 0 or > 1).
	CompactThreshold float64
	// Output, when set, makes the final answer a structured one (see
	// Output).
	Output *Output
	// Budget caps what each session of the agent spends with its
	// subtree (spawn.Invocation.LimitSpend); zero: no cap of its own.
	Budget spawn.Budget
}

// Agent is an immutable agent definition.
type Agent struct {
	cfg    Config
	tools  map[string]tool.Tool
	specs  []model.ToolSpec
	output *outputCheck // nil: a plain text answer
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
	if cfg.MaxResponseBytes <= 0 {
		cfg.MaxResponseBytes = DefaultMaxResponseBytes
	}
	if cfg.MaxToolCallsPerTurn <= 0 {
		cfg.MaxToolCallsPerTurn = DefaultMaxToolCallsPerTurn
	}
	if cfg.CompactThreshold <= 0 || cfg.CompactThreshold > 1 {
		cfg.CompactThreshold = DefaultCompactThreshold
	}
	a := &Agent{cfg: cfg, tools: map[string]tool.Tool{}}
	var err error
	if a.output, err = newOutputCheck(cfg.Output); err != nil {
		return nil, fmt.Errorf("agent %s: output schema: %w", cfg.Name, err)
	}
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

// Name implements spawn.Node.
func (a *Agent) Name() string { return a.cfg.Name }

// Description implements spawn.Node.
func (a *Agent) Description() string { return a.cfg.Description }

// SourceType implements spawn.Node.
func (a *Agent) SourceType() event.SourceType { return event.SourceAgent }

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
	a    *Agent
	inv  *spawn.Invocation
	sink event.Sink
	// mu guards msgs, which the run's tools read (HistoryFrom) while the
	// run appends; the maps (tools, client) are set before the first turn
	// and only read after, so they need no lock.
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
	// lastID is the id of the last message append stored; callMsgID,
	// that of the message whose tool calls run now ("" when the Env
	// stored it): their tool.Call.MessageID, the checkpoint of the files
	// they change.
	lastID, callMsgID string
	turn              turnState // the model response being streamed
	// tools and specs are the agent's, or, with toolsets (its own, or
	// those its invocation was lent: spawn.Invocation.Toolsets), the
	// agent's plus theirs.
	tools map[string]tool.Tool
	specs []model.ToolSpec
	// env is the run's surroundings under a durable engine (spawn.Env);
	// nil in this process's runs, which take the direct paths.
	env spawn.Env
	// hooks are the agent's Hooks, or, under an Env that is a hookEnv,
	// the same hooks called through it.
	hooks Hooks
	// compact is the state of compaction (compact.go).
	compact compactState
	// model is what the run's model calls go to: the agent's model, or
	// the one its invocation chose (spawn.Invocation.Model); chosen
	// tells which.
	model  model.Model
	chosen *spawn.ModelChoice
	// client names the invocation's client tools (client.go).
	client map[string]bool
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
	r.keep(msgs...)
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
	var now time.Time
	if r.env == nil {
		now = time.Now()
	} else {
		now = r.env.Now(ctx)
	}
	for _, m := range msgs {
		var mid string
		if r.env == nil {
			mid = id.AscendingAt(id.Message, now)
		} else {
			mid = r.env.NewID(ctx, id.Message)
		}
		r.lastID = mid
		stored = append(stored, session.Message{ID: mid, SessionID: r.inv.Session.ID, AgentName: r.a.cfg.Name, CreatedAt: now, Message: m})
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

// keep adds msgs to the conversation without storing them (append stores
// them too).
func (r *run) keep(msgs ...model.Message) {
	r.mu.Lock()
	r.msgs = append(r.msgs, msgs...)
	r.mu.Unlock()
}

// snapshot returns the conversation for a model request without copying:
// messages are never changed once appended, and the full slice expression
// keeps a model (or hook) that appends to the request from writing into
// the run's backing array. After a compaction it is the summary and the
// messages kept after it (a new slice).
func (r *run) snapshot() []model.Message {
	r.mu.Lock()
	defer r.mu.Unlock()
	if c := &r.compact; c.summary != nil {
		return append([]model.Message{*c.summary}, r.msgs[c.from:]...)
	}
	return r.msgs[:len(r.msgs):len(r.msgs)]
}

// Run implements spawn.Node.
func (a *Agent) Run(ctx context.Context, inv *spawn.Invocation) (res spawn.Result) {
	// Room for the prompt and a tool round trip without growing.
	msgs := make([]model.Message, len(inv.History), len(inv.History)+4)
	copy(msgs, inv.History)
	r := &run{a: a, inv: inv, sink: inv.Sink, msgs: msgs, added: len(msgs), persistCtx: detach.Context(ctx), env: inv.Env, hooks: a.cfg.Hooks,
		model: a.cfg.Model}
	if c := inv.Model; c != nil && c.Model != nil && inv.Env == nil {
		r.model, r.chosen = c.Model, c
	}
	if he, ok := r.env.(hookEnv); ok && r.hooks != nil {
		r.hooks = envHooks{env: he, inv: inv, agent: a.cfg.Name, local: r.hooks}
	}
	if spawn.InvocationFrom(ctx) != inv {
		ctx = spawn.WithInvocation(ctx, inv)
	}
	if !a.cfg.Budget.IsZero() { // the owner's name costs an allocation
		inv.LimitSpend("agent "+a.cfg.Name, a.cfg.Budget)
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
		inv.AwaitAsync(ctx)
		r.end()
	}()

	if inv.Continue == nil {
		// A continued run goes on with the run its log started.
		started := event.RunStarted{SessionID: inv.Session.ID, RunID: inv.RunID, AgentName: a.cfg.Name, ParentSessionID: inv.Session.ParentID}
		if r.chosen != nil {
			started.Model = r.model.ID()
		}
		r.sink.Emit(started)
	}
	r.tools, r.specs = a.toolsFor(ctx, inv, r.sink)
	if err := lendClientTools(r); err != nil {
		return r.fail(ctx, err, event.StopError, "client_tools")
	}
	if c := inv.Compact; c != nil && inv.Continue == nil {
		return r.compactOnly(ctx, c.Instructions)
	}
	if inv.Shell != "" && inv.Continue == nil {
		return r.shellOnly(ctx, inv.Shell)
	}

	prompt := inv.Prompt
	if h := r.hooks; h != nil && prompt != "" {
		d := h.PromptSubmit(ctx, PromptInfo{Agent: a.cfg.Name, SessionID: inv.Session.ID, Content: prompt})
		if d.Block {
			return r.fail(ctx, fmt.Errorf("prompt blocked: %s", d.Reason), event.StopError, "blocked")
		}
		if d.Context != "" {
			inv.Inject(d.Context)
		}
	}
	if len(inv.ClientResults) > 0 {
		recordClientResults(ctx, r)
	}
	if prompt != "" {
		r.append(ctx, model.UserText(prompt))
	}
	system := a.cfg.SystemPrompt
	if inv.Instructions != "" {
		if system != "" {
			system += "\n\n"
		}
		system += inv.Instructions
	}
	turn := 1
	if c := inv.Continue; c != nil {
		// The turns before the restart count: the run that died recorded
		// what they spent (recordSpent), never its totals.
		r.usage, r.cost = session.RunSpent(c.Waiting.Session)
		turn = r.continueTurn(ctx, c)
	}
	finalText := ""
	var lastFinish string
	outputRetries := 0
	for ; ; turn++ {
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
		if f := r.fit(ctx); f.ended {
			return f.res
		}
		req := &model.Request{System: system, Messages: r.snapshot(), Tools: r.specs}
		if a.output != nil {
			req.Output = a.output.req
		}
		if h := r.hooks; h != nil {
			req = h.ModelRequest(ctx, a.cfg.Name, inv.Session.ID, req)
		}
		msg, finish, stored, err := r.budgetedTurn(ctx, req)
		if errors.Is(err, spawn.ErrBudget) {
			return r.fail(ctx, err, event.StopBudget, "budget")
		}
		if err != nil {
			if ctx.Err() != nil {
				return r.abort(ctx, context.Cause(ctx))
			}
			if errors.Is(err, ErrResponseTooLarge) {
				return r.fail(ctx, fmt.Errorf("model %s: %w", r.model.ID(), err), event.StopError, "max_response_bytes")
			}
			return r.fail(ctx, fmt.Errorf("model %s: %w", r.model.ID(), err), event.StopError, "model_error")
		}
		if stored {
			r.keep(msg) // the Env stored it with the turn
			r.callMsgID = ""
		} else {
			r.lastID = ""
			r.append(ctx, msg)
			r.callMsgID = r.lastID
		}
		lastFinish = finish
		calls := msg.ToolCalls()
		if len(calls) > 0 {
			r.recordSpent()
		}
		if client, own := splitClient(r, calls); len(client) > 0 {
			return endForClient(ctx, r, msg, finish, client, own)
		}
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
			if h := r.hooks; h != nil {
				if d := h.TurnStop(ctx, TurnStopInfo{Agent: a.cfg.Name, SessionID: inv.Session.ID, FinalMessage: finalText}); d.Continue {
					r.append(ctx, model.Message{Role: model.RoleUser, Parts: []model.Part{{Kind: model.PartText, Text: d.Reason}}, Synthetic: true})
					continue
				}
			}
			if oc := a.output; oc != nil {
				v, raw, err := oc.parse(finalText)
				if err != nil && outputRetries < oc.spec.Retries {
					outputRetries++
					r.append(ctx, oc.retryMessage(err))
					continue
				}
				if err != nil {
					return r.fail(ctx, fmt.Errorf("%w %s: %v", ErrOutput, oc.req.Name, err), event.StopError, "output_invalid")
				}
				finalText = raw
				r.sink.Emit(event.Custom{EventType: EventStructuredOutput, Source: "agent", EventData: map[string]any{
					"agent": a.cfg.Name, "name": oc.req.Name, "output": v,
				}})
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
		Role: "assistant", Content: finalText, Usage: r.usage, Cost: r.cost, Model: r.model.ID(), FinishReason: lastFinish,
	}})
	return spawn.Result{Output: finalText, StopReason: stop}
}

// waitInjected reports whether the model should get another turn because
// injected context is waiting, blocking while async children still run.
func (r *run) waitInjected(ctx context.Context) bool {
	inbox := r.inv.Inbox()
	if r.env != nil {
		// A workflow waits through its Env (the children's ends and the
		// cancellation come from its other coroutines).
		r.env.Await(ctx, func() bool { return inbox.Len() > 0 || r.inv.PendingAsync() == 0 || ctx.Err() != nil })
		return inbox.Len() > 0
	}
	return r.inv.WaitInjected(ctx)
}

func (r *run) drainInbox(ctx context.Context) {
	items := r.inv.TakeInjected()
	if len(items) == 0 {
		return
	}
	msgs := make([]model.Message, len(items))
	for i, c := range items {
		msgs[i] = model.Message{Role: model.RoleUser, Parts: []model.Part{{Kind: model.PartText, Text: c.Text}}, Synthetic: true}
		if c.Event != nil {
			// A message sent to the session (spawn.Runtime.Message): its
			// stream shows it where the model reads it.
			r.sink.Emit(c.Event)
		}
	}
	r.append(ctx, msgs...)
}

func (r *run) fail(ctx context.Context, err error, stop event.StopReason, code string) spawn.Result {
	// The run's error is the last event of its session: async children
	// (whose ends belong to this session) must end before it.
	r.inv.AwaitAsync(ctx)
	r.sink.Emit(event.RunError{Message: err.Error(), Code: code, RunID: r.inv.RunID, AgentName: r.a.cfg.Name})
	return spawn.Result{Output: r.lastText(), StopReason: stop, Err: err}
}

func (r *run) abort(ctx context.Context, cause error) spawn.Result {
	if cause == nil {
		cause = context.Canceled
	}
	r.inv.AwaitAsync(ctx) // see fail
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

// Hooks returns the agent's hooks (nil: none): what a durable engine's
// hook activity calls (hookEnv).
func (a *Agent) Hooks() Hooks { return a.cfg.Hooks }

// Tool returns the agent's own tool of that name (what a durable engine's
// tool activity runs for a call of the agent's run).
func (a *Agent) Tool(name string) (tool.Tool, bool) {
	t, ok := a.tools[name]
	return t, ok
}
