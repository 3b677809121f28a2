package pool

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentpool/agentpool/agent"
	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/hook"
	"github.com/agentpool/agentpool/id"
	"github.com/agentpool/agentpool/internal/detach"
	"github.com/agentpool/agentpool/model"
	"github.com/agentpool/agentpool/record"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/spawn"
	"github.com/agentpool/agentpool/tool"
	"github.com/agentpool/agentpool/tool/workspace"
	"github.com/agentpool/agentpool/tracing"
)

// Options configure a Pool.
type Options struct {
	// Store keeps sessions; an in-memory store when nil.
	Store  session.Store
	Logger *slog.Logger
	// Hooks observe and steer runs (nil: none): every point of
	// docs/spec/HOOKS.md (the agents' seams, subagent and root session
	// start and end), the agents' tool_approval policies (Build hands
	// them to it) and a session's shell environment file for Bash
	// (Registry.SetShellEnvFile).
	Hooks *hook.Registry
	// ExtraTools are offered to every agent, besides its own tools.
	ExtraTools []tool.Tool
	// Workspace is the directory the file and shell tools act in; empty:
	// Config.Workspace (a manifest's `workspace:`), else the current
	// directory.
	Workspace string
	// Processor records every root run into the event logs (a
	// record.Recorder per run); nil: a new one on Store. A protocol
	// server that shows the session tree watches it with its own
	// sessiontree.Projection (Pool.Processor).
	Processor *record.Processor
	// TracerProvider and MeterProvider, when set, trace the pool's runs
	// and record their metrics with OpenTelemetry (see docs/tracing.md):
	// a span per session, model call and tool call, nested like the
	// session tree. With neither, nothing is instrumented and runs cost
	// what they did without them.
	TracerProvider trace.TracerProvider
	MeterProvider  metric.MeterProvider
	// Engine, when set, runs the root sessions (RunSink) out of this
	// process, on a durable execution engine whose workers store the
	// events; nil: in this process. Everything else of RunSink stays:
	// the session's claim, its history, the session hooks, the recorder's
	// watchers and the caller's sink.
	Engine Engine
	// Subreaper makes this process a child subreaper (Linux,
	// prctl PR_SET_CHILD_SUBREAPER) from Build until Close: a process that
	// a shell command, a hook or an MCP server started and that was
	// orphaned after it left its process group (setsid, then its parent
	// exited) is reparented to this process rather than to init, so it is
	// killed with its tree and reaped. Only such adopted processes are
	// reaped, never a child the program waits for itself. The setting is
	// the process's: pools that set it share it until the last one
	// closes. Elsewhere than Linux it does nothing. (The agentpool CLI is
	// a subreaper for its whole life.)
	Subreaper bool
	// Registry wires in what the core does not build itself: model types
	// beyond test, scripted and fallback, the fetch toolset and MCP
	// servers. nil: NewRegistry() (offline models, no fetch, no MCP).
	// New builds the manifest's models with it; batteries.Registry() has
	// everything agentpool ships.
	Registry *Registry
	// Commands are the project's slash commands, offered by every front
	// end (Pool.Commands); a later one of the same name wins.
	Commands []Command
	// Budget caps what each root run spends on model calls, its whole
	// tree included, unless its RunRequest sets one (docs/control.md,
	// Budgets); zero: no cap. Not kept on Engine.
	Budget spawn.Budget
}

// Pool is a set of runnable nodes (agents, teams, custom nodes) built from
// a manifest (New) or from Go values (Build). It is safe for concurrent
// runs.
type Pool struct {
	manifest *config.Manifest
	store    session.Store
	proc     *record.Processor
	rt       *spawn.Runtime
	nodes    map[string]spawn.Node
	// models are the models of the plain agents by name, as their runs
	// use them (RunRequest.ModelOf).
	models      map[string]spawn.ModelChoice
	order       []string
	defaultNode string
	log         *slog.Logger
	// hooks are Options.Hooks (nil: none). A root run calls its
	// session/start after the session is registered and before the node
	// runs (so what it injects reaches the first model request) and its
	// session/end once after the run and all its children have ended,
	// both with the root Invocation in their context. A root node that is
	// not an agent (a team) goes through its agent/prompt-submit and
	// agent/turn-stop as an agent does (rootNode).
	hooks    *hook.Registry
	builtins *builtins
	engine   Engine       // nil: runs in this process
	budget   spawn.Budget // Options.Budget
	// obs makes the runs' spans and metrics (nil: none); traced holds the
	// nodes it decorates, which the runtime runs (nodes keeps the
	// undecorated ones, which Node returns).
	obs    *tracing.Observer
	traced map[string]spawn.Node
	// unreap releases Options.Subreaper's hold (nil: none).
	unreap func()
	lost   unsettled // sessions of runs that lost writes, to mark failed (lost.go)
	// commands are Options.Commands, one per name (commands.go).
	commands []Command
}

// ErrUnknownNode is returned for a run of a node the pool does not have.
var ErrUnknownNode = spawn.ErrUnknownNode

// Manifest returns the manifest the pool was built from (New), or a
// description of its Config (Build: models by ID without a type; custom
// nodes are in neither Agents nor Teams). Never nil.
func (p *Pool) Manifest() *config.Manifest { return p.manifest }

// Store returns the pool's session store.
func (p *Pool) Store() session.Store { return p.store }

// SessionMetrics records the metrics of sessions that run elsewhere (a
// durable engine's workers): their starts and ends. It records nothing
// when the pool has no meter (Options.MeterProvider).
func (p *Pool) SessionMetrics() SessionMetrics { return p.obs }

// SessionMetrics records session starts and ends in the pool's metrics
// (agentpool.sessions.started, .ended, agentpool.session.duration,
// agentpool.cost), for sessions the pool does not run itself.
type SessionMetrics interface {
	SessionStarted(ctx context.Context, agent string, depth int)
	SessionEnded(ctx context.Context, agent string, stop event.StopReason, cost float64, d time.Duration)
}

// Processor returns the processor that records every root run; watch it
// (Processor.Watch) to follow the runs, for example with a
// sessiontree.Projection.
func (p *Pool) Processor() *record.Processor { return p.proc }

// Runtime returns the spawn runtime (for manual spawns, Inject, tasks).
func (p *Pool) Runtime() *spawn.Runtime { return p.rt }

// Engine returns Options.Engine (nil: the pool runs its roots itself).
func (p *Pool) Engine() Engine { return p.engine }

// Node returns a node by name.
func (p *Pool) Node(name string) (spawn.Node, bool) { n, ok := p.nodes[name]; return n, ok }

// NodeNames lists the nodes: agents in order, then teams, then custom
// nodes.
func (p *Pool) NodeNames() []string { return append([]string(nil), p.order...) }

// DefaultNode is the node a run without a name starts: the manifest's
// default_agent (Config.Default), else the first agent, team or node.
func (p *Pool) DefaultNode() string { return p.defaultNode }

// RunRequest asks for a root run.
type RunRequest struct {
	Node   string // node name; DefaultNode when empty
	Prompt string
	// SessionID continues an existing session with its history; a new root
	// session is created when empty.
	SessionID string
	// NewSessionID, when set, is the id of the session to create (protocol
	// servers that allocate ids themselves).
	NewSessionID string
	// Toolsets are lent to this run only, besides the agents' own tools:
	// every agent of the run (the root and the children it spawns) offers
	// their tools, its own winning a name both have (the MCP servers an
	// ACP client named for its session). A failing toolset costs the run
	// its tools and is reported in the stream. A run on Options.Engine
	// does not get them.
	Toolsets []tool.Toolset
	// KeepSession keeps the session open across runs for the hooks
	// (Options.Hooks): session/start fires at its first kept run only and
	// session/end when the caller ends it (hook.Registry.EndSession), not
	// around each run. The ACP server keeps an editor's session open so.
	KeepSession bool
	// Budget caps what this run spends on model calls, its whole tree
	// included (Options.Budget when zero): when it is reached no model
	// call starts in the run and its sessions end with stop reason
	// budget. A budget that Budget.Check refuses is an error of RunSink.
	Budget spawn.Budget
	// Compact, with SessionID and no Prompt, makes the run a manual
	// compaction of the stored session (an agent's): its older turns are
	// summarised into one message, and the run answers with the summary
	// (docs/control.md, Compaction). Not on Options.Engine.
	Compact *CompactRequest
	// Shell, with SessionID and no Prompt, makes the run of a plain agent
	// run this command line through its Bash tool (hooks and approval
	// rules apply), recorded in the conversation, without a model turn
	// (OpenCode's shell). Not on Options.Engine.
	Shell string
	// ModelOf names an agent of the pool whose model (as that agent's runs
	// use it: its settings, price and context window) the root agent runs
	// on in this run instead of its own: a client chose another of the
	// pool's models for this turn. The children the run spawns keep their
	// own models. "" or the root's own name: its own model. The root must
	// be a plain agent; not on Options.Engine.
	ModelOf string
	// Instructions are added to the system prompt of the root agent's
	// model requests in this run only (an AG-UI client's context); not
	// stored. Not on Options.Engine; the node must be a plain agent.
	Instructions string
	// ClientTools are tools the caller's client runs itself (AG-UI
	// front-end tools), offered to the root agent's model in this run
	// only; a name the agent's own tools have fails the run. A model turn
	// that calls one ends the run with RunResult.Result.ClientCalls (stop
	// reason completed): the calls stay open in the session until a later
	// run brings their results (ClientResults). Not on Options.Engine;
	// the node must be a plain agent.
	ClientTools []model.ToolSpec
	// ClientResults, with SessionID, are the results of the client calls
	// the session's last run left open (session.OpenCalls), exactly one
	// per open call (Part.ToolCallID; Text, IsError): the run records them
	// as those calls' results, then takes Prompt (which may be empty) and
	// its next model turn.
	ClientResults []model.Part
}

// CompactRequest asks for a manual compaction (RunRequest.Compact): the
// run's root invocation carries a copy (spawn.Invocation.Compact).
type CompactRequest = spawn.Compaction

// RunResult is how a root run ended.
type RunResult struct {
	SessionID  string
	Result     spawn.Result
	TotalUsage event.Usage
	TotalCost  float64
}

// RunSink runs a node as a root run, emitting every event to sink, and
// returns when the run and all of its children have ended. The error is
// non-nil only when the run could not start (unknown node or session,
// store failure, or the session runs already: an error that
// errors.Is session.ErrRunning, a *session.RunningError that says where);
// how the run ended is in RunResult.Result.
//
// A run whose store did not keep all of its writes (session.TrackWrites
// accounts for every write of the run, those answered before their
// commit included) failed, whatever its node said: RunResult.Result has
// stop reason error and an Err that errors.Is session.ErrNotStored (a
// *session.NotStoredError that names the store and the cause), and keeps
// the node's Output. Its session is marked failed in the store
// (session.CloseFailed); when the store fails again, before the next run
// of the pool and at Close.
//
// The session is claimed in the store for the whole run (from before it
// is read to after the session/end hook), so that no other run, in this
// process or another one on the same store, runs it meanwhile. The run's
// stream goes through a record.Recorder (the pool's processor), which
// stores each event before sink gets it; the run itself is spawn's
// (Runtime.RunRoot), as a child's is, or, with Options.Engine, the
// engine's (see Engine): its workers store the events, which the recorder
// hands on without storing them again; the session is registered in the
// runtime (Runtime.Running) for the run's duration all the same.
func (p *Pool) RunSink(ctx context.Context, req RunRequest, sink event.Sink) (RunResult, error) {
	name := req.Node
	if name == "" {
		name = p.DefaultNode()
	}
	node, ok := p.nodes[name]
	if !ok {
		return RunResult{}, fmt.Errorf("%w %q; available: %v", ErrUnknownNode, name, p.order)
	}
	if c := req.Compact; c != nil {
		switch {
		case req.SessionID == "" || req.Prompt != "":
			return RunResult{}, errors.New("pool: a compaction is of a stored session (RunRequest.SessionID) and takes no prompt")
		case p.engine != nil:
			return RunResult{}, errors.New("pool: compaction is not done under a durable execution engine")
		}
		if _, ok := node.(*agent.Agent); !ok {
			return RunResult{}, fmt.Errorf("pool: compaction is of an agent's conversation; %q is not a plain agent (a team, a custom node or an agent with connections)", name)
		}
	}
	var chosen *spawn.ModelChoice
	if req.ModelOf != "" && req.ModelOf != name {
		c, err := chooseModel(p, node, name, req.ModelOf)
		if err != nil {
			return RunResult{}, err
		}
		chosen = &c
	}
	if req.Shell != "" {
		switch {
		case req.SessionID == "" || req.Prompt != "" || req.Compact != nil:
			return RunResult{}, errors.New("pool: a shell command runs in a stored session (RunRequest.SessionID) and takes no prompt")
		case p.engine != nil:
			return RunResult{}, errors.New("pool: shell commands are not run under a durable execution engine")
		}
		if _, ok := node.(*agent.Agent); !ok {
			return RunResult{}, fmt.Errorf("pool: a shell command runs through an agent's Bash tool; %q is not a plain agent (a team, a custom node or an agent with connections)", name)
		}
	}
	if err := checkClientRequest(req, name, node, p.engine != nil); err != nil {
		return RunResult{}, err
	}
	budget := req.Budget
	if budget.IsZero() {
		budget = p.budget
	}
	if err := budget.Check(); err != nil {
		return RunResult{}, fmt.Errorf("run: %w", err)
	}
	now := time.Now()
	sid := req.SessionID
	if sid == "" {
		sid = req.NewSessionID
		if sid == "" {
			sid = id.DescendingAt(id.Session, now)
		}
	}
	return p.runClaimed(ctx, sid, req.KeepSession, req.SessionID == "", func(ctx context.Context) (rootRun, error) {
		sess, history, err := p.loadSession(ctx, req, sid, name, node, now)
		if err != nil {
			return rootRun{}, err
		}
		rec := p.proc.Open(ctx, sess.ID, sink)
		inv, err := p.rt.NewRoot(sess, id.AscendingAt(id.Run, now), req.Prompt, history, rec)
		if err != nil {
			return rootRun{}, err
		}
		inv.Toolsets = slices.Clip(req.Toolsets)
		if c := req.Compact; c != nil {
			c := *c // a snapshot: the caller's value is not read again
			inv.Compact = &c
		}
		inv.Shell = req.Shell
		inv.Model = chosen
		inv.Instructions = req.Instructions
		inv.ClientTools = slices.Clip(req.ClientTools)
		inv.ClientResults = slices.Clip(req.ClientResults)
		inv.LimitSpend("the run", budget)
		return rootRun{inv: inv, node: node, rec: rec, started: now}, nil
	})
}

// chooseModel checks RunRequest.ModelOf (of) for a run of node (named
// name) and returns the model it names. (A function: Pool's methods are
// bounded by tests/floors.)
func chooseModel(p *Pool, node spawn.Node, name, of string) (spawn.ModelChoice, error) {
	c, ok := p.models[of]
	switch {
	case !ok:
		return c, fmt.Errorf("pool: RunRequest.ModelOf: %q is not an agent of the pool with a model of its own; agents: %v", of, slices.Sorted(maps.Keys(p.models)))
	case p.engine != nil:
		return c, errors.New("pool: RunRequest.ModelOf: another model for a run is not done under a durable execution engine")
	}
	if _, ok := node.(*agent.Agent); !ok {
		return c, fmt.Errorf("pool: RunRequest.ModelOf: %q is not a plain agent (a team, a custom or external node, or an agent with connections): it runs on its own models", name)
	}
	return c, nil
}

// rootRun is a root run ready to start (the session's claim is held): its
// invocation, registered in the runtime, the node it runs, its recorder
// and when it began.
type rootRun struct {
	inv     *spawn.Invocation
	node    spawn.Node
	rec     *record.Recorder
	started time.Time
}

// runClaimed claims session sid, opens the account of the run's writes,
// has prepare make the run (it reads the session after the claim), then
// stores the session running (created when new), runs the session/start
// hook, the run and the session/end hook, releases the claim and says how
// the run ended (see RunSink). keep is RunRequest.KeepSession.
func (p *Pool) runClaimed(ctx context.Context, sid string, keep, created bool, prepare func(ctx context.Context) (rootRun, error)) (RunResult, error) {
	p.settlePending(false)
	if err := p.store.Claim(ctx, sid); err != nil {
		return RunResult{}, err
	}
	// The run acknowledges nothing outside this process before its
	// Release returns (it returns after it): the store may make the run's
	// session writes durable together rather than one by one. Every write
	// of the run is accounted for, so that a lost one fails it.
	ctx, writes := session.TrackWrites(ctx, session.WriteOptions{DeferCommits: true})
	released := false
	defer func() {
		if !released {
			p.release(ctx, sid)
		}
	}()
	r, err := prepare(ctx)
	if err != nil {
		return RunResult{}, err
	}
	inv := r.inv
	sess := inv.Session
	if err := p.markRunning(ctx, sess, !created); err != nil {
		p.rt.Release(inv)
		return RunResult{}, err
	}
	if p.hooks != nil {
		source := hook.SourceStartup
		if !created {
			source = hook.SourceResume
		}
		p.hooks.SessionStart(spawn.WithInvocation(ctx, inv), sess, source, keep)
	}
	var end spawn.RunEnd
	if p.engine != nil {
		end = p.runOnEngine(ctx, r.node, inv, r.rec, r.started)
	} else {
		end = p.rt.RunRoot(ctx, p.obs.Node(p.rootNode(r.node)), inv, r.started)
	}
	if p.hooks != nil {
		p.hooks.SessionEnd(spawn.WithInvocation(detach.Context(ctx), inv), sess, end.Result.StopReason, keep)
	}
	// The run's consumers (the caller's sink, the watchers) have had
	// every event of the run before its result is returned: the recorder
	// may hand an event on after its Emit returned (record.Recorder.Sync).
	r.rec.Sync()
	released = true
	p.release(ctx, sid) // after it, the account of the run's writes is complete
	res := RunResult{SessionID: sess.ID, Result: end.Result, TotalUsage: end.TotalUsage, TotalCost: end.TotalCost}
	if err := writes.Err(); err != nil {
		p.log.Error("the store did not keep the run's writes: the run failed", "session", sid, "err", err)
		res.Result = notStored(res.Result, err)
		run := lostRun{sid: sid, cause: err}
		if created {
			created := sess // a copy: sess itself stays on the stack
			run.created = &created
		}
		p.settleLost(run)
	}
	return res, nil
}

// release ends the run's claim on sid once what the run wrote is durable.
func (p *Pool) release(ctx context.Context, sid string) {
	if err := p.store.Release(detach.Context(ctx), sid); err != nil {
		p.log.Warn("release the session's claim", "session", sid, "err", err)
	}
}

// loadSession returns the root session of a run whose claim is held: the
// record of a new one, or the stored session of req.SessionID with its
// history. A stored session still marked running (or interrupted) was
// left by a run that stopped without ending, since its claim was free:
// what that run left open is closed first (session.CloseInterrupted), so
// that the conversation is one a provider takes and the log ends every
// delegation.
func (p *Pool) loadSession(ctx context.Context, req RunRequest, sid, name string, node spawn.Node, now time.Time) (session.Session, []model.Message, error) {
	if req.SessionID == "" {
		return session.Session{
			ID: sid, AgentName: name, SourceType: node.SourceType(), Title: title(req.Prompt),
			Status: session.StatusRunning, CreatedAt: now, UpdatedAt: now,
		}, nil, nil
	}
	sess, err := p.store.GetSession(ctx, sid)
	if err != nil {
		return sess, nil, err
	}
	if sess.Status == session.StatusRunning || sess.Status == session.StatusInterrupted {
		p.log.Warn("resuming a session whose last run was interrupted", "session", sid)
		if err := session.CloseInterrupted(ctx, p.store, sid); err != nil {
			return sess, nil, fmt.Errorf("close the interrupted run of %s: %w", sid, err)
		}
	}
	stored, err := p.store.Messages(ctx, sid)
	if err != nil {
		return sess, nil, err
	}
	if len(req.ClientResults) > 0 {
		h, err := clientHistory(sess, stored, req.ClientResults)
		return sess, h, err
	}
	return sess, session.CompactedHistory(sess, stored), nil
}

// markRunning stores the run's root session: a new one is created, a
// resumed one set running again.
func (p *Pool) markRunning(ctx context.Context, sess session.Session, resume bool) error {
	if !resume {
		return p.store.CreateSession(ctx, sess)
	}
	return p.store.UpdateSession(ctx, sess.ID, func(s *session.Session) { s.Status = session.StatusRunning; s.StopReason = "" })
}

// Run runs a node as a root run and yields its events. Stopping the
// iteration early cancels the run and waits for it to wind down. A non-nil
// error is yielded last, only when the run could not start or when the
// store did not keep the run's writes (see RunSink: an error that
// errors.Is session.ErrNotStored).
func (p *Pool) Run(ctx context.Context, req RunRequest) iter.Seq2[event.Event, error] {
	return func(yield func(event.Event, error) bool) {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		ch := make(chan event.Event, 256)
		gone := make(chan struct{})
		var runErr error
		go func() {
			defer close(ch)
			var res RunResult
			res, runErr = p.RunSink(ctx, req, event.SinkFunc(func(e event.Event) {
				select {
				case ch <- e:
				case <-gone:
				}
			}))
			if runErr == nil && errors.Is(res.Result.Err, session.ErrNotStored) {
				runErr = res.Result.Err
			}
		}()
		for e := range ch {
			if !yield(e, nil) {
				close(gone)
				cancel()
				for range ch {
				}
				return
			}
		}
		if runErr != nil {
			yield(nil, runErr)
		}
	}
}

func title(prompt string) string {
	const n = 60
	if len(prompt) <= n {
		return prompt // at most n bytes: at most n runes
	}
	count := 0
	for i := range prompt {
		if count == n {
			return prompt[:i] + "..."
		}
		count++
	}
	return prompt
}

// Close stops the pool's background shells and MCP servers (each with
// its whole process tree), closes the nodes that are io.Closers (a
// remote agent's server the node started itself), marks failed the sessions of runs that lost
// writes that are not yet (RunSink), flushes and closes the store, closes
// Options.Engine when it is an io.Closer, then releases
// Options.Subreaper.
func (p *Pool) Close() error {
	bi := p.builtins.close()
	for _, name := range p.order {
		if c, ok := p.nodes[name].(io.Closer); ok {
			bi = errors.Join(bi, c.Close())
		}
	}
	p.settlePending(true)
	err := errors.Join(bi, p.store.Flush(context.Background()), p.store.Close())
	if c, ok := p.engine.(io.Closer); ok {
		err = errors.Join(err, c.Close())
	}
	if p.unreap != nil {
		p.unreap() // after the trees ended with the builtins
	}
	return err
}

// Workspace returns the directory the pool's file and shell tools act in.
func (p *Pool) Workspace() *workspace.Workspace { return p.builtins.ws }

// MCP returns the pool's MCP servers, as the Registry's MCPMaker made
// them (batteries: a *mcp.Manager); nil when no enabled server is
// declared.
func (p *Pool) MCP() MCPServers { return p.builtins.mcp }

// Cancel cancels the running session sessionID of one of the pool's runs
// (spawn.Runtime.Cancel): a child ends aborted with its subtree while its
// parent and siblings go on; a root session's whole run ends. by names
// who asked (the front end: "opencode", "acp", ...). The channel is
// closed once the session's run has ended. An unknown session errors.Is
// session.ErrNotFound, an ended one spawn.ErrNotRunning; one that another
// process runs, spawn.ErrRunsElsewhere.
//
// On an engine that runs sessions elsewhere (Temporal), a session the
// runtime does not run here is cancelled through the engine when it is an
// EngineCanceller.
func (p *Pool) Cancel(ctx context.Context, sessionID, by string) (<-chan struct{}, error) {
	done, err := p.rt.Cancel(ctx, sessionID, by)
	if c, ok := p.engine.(EngineCanceller); ok && errors.Is(err, spawn.ErrRunsElsewhere) {
		return c.Cancel(ctx, sessionID, by)
	}
	return done, err
}

// Message sends text to the running session sessionID of one of the
// pool's runs, from a person at a front end (by: "opencode", "web", ...):
// the session's model reads it at its next turn, and its stream shows it
// (spawn.Runtime.Message; errors as for Cancel). A session that has ended
// is continued with a run of its own (RunSink with its SessionID) once
// its tree's run is over; docs/control.md.
//
// On an engine that runs sessions elsewhere (Temporal), a session the
// runtime does not run here gets the message through the engine when it
// is an EngineMessenger.
func (p *Pool) Message(ctx context.Context, sessionID, by, text string) error {
	m, onEngine := p.engine.(EngineMessenger)
	if onEngine && p.rt.Running(sessionID) {
		// A root run handed to the engine is registered here, but its
		// model runs on a worker: an inbox here would never be read.
		if strings.TrimSpace(text) == "" || len(text) > spawn.MaxMessageBytes {
			return fmt.Errorf("message %s: the message is empty or longer than %d bytes", sessionID, spawn.MaxMessageBytes)
		}
		return m.Message(ctx, sessionID, by, text)
	}
	err := p.rt.Message(ctx, sessionID, spawn.Sender{By: by}, text)
	if onEngine && errors.Is(err, spawn.ErrRunsElsewhere) {
		return m.Message(ctx, sessionID, by, text)
	}
	return err
}
