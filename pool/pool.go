package pool

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"runtime/debug"
	"sync"
	"time"

	"github.com/agentpool/agentpool/agent"
	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/id"
	"github.com/agentpool/agentpool/model"
	"github.com/agentpool/agentpool/processor"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/session/memory"
	"github.com/agentpool/agentpool/spawn"
	"github.com/agentpool/agentpool/team"
	"github.com/agentpool/agentpool/tool"
	"github.com/agentpool/agentpool/tool/mcp"
	"github.com/agentpool/agentpool/tool/workspace"
)

// Options configure a Pool.
type Options struct {
	// Store keeps sessions; an in-memory store when nil.
	Store  session.Store
	Logger *slog.Logger
	// Hooks are the agent interception seams (nil: none).
	Hooks agent.Hooks
	// Lifecycle observes subagent start and end (nil: none).
	Lifecycle spawn.Lifecycle
	// ExtraTools are offered to every agent, besides its manifest tools.
	ExtraTools []tool.Tool
	// Workspace is the directory the file and shell tools act in; empty:
	// the manifest's `workspace:`, else the current directory.
	Workspace string
	// Processor projects every root stream into the session tree and
	// writes the event logs; nil: a new one on Store. Protocol servers
	// subscribe to it (Pool.Processor).
	Processor *processor.Processor
}

// SessionHooks is implemented by an Options.Hooks (or Options.Lifecycle)
// value that also observes root sessions: the session/start and session/end
// points of docs/spec/HOOKS.md. Both are called synchronously with a context
// that carries the root Invocation (spawn.InvocationFrom): SessionStart
// after the session is registered and before the node runs (so what it
// injects reaches the first model request), SessionEnd once after the run
// and all its children have ended. source is "startup" for a new session
// and "resume" for a continued one; reason is the run's stop reason.
type SessionHooks interface {
	SessionStart(ctx context.Context, s session.Session, source string)
	SessionEnd(ctx context.Context, s session.Session, reason string)
}

// Pool is a loaded manifest. It is safe for concurrent runs.
type Pool struct {
	manifest *config.Manifest
	store    session.Store
	proc     *processor.Processor
	rt       *spawn.Runtime
	nodes    map[string]spawn.Node
	order    []string
	log      *slog.Logger
	sessions SessionHooks // nil: none
	builtins *builtins
}

// ErrUnknownNode is returned for a run of a node the pool does not have.
var ErrUnknownNode = spawn.ErrUnknownNode

// New builds a pool from a validated manifest.
func New(m *config.Manifest, opts Options) (*Pool, error) {
	if opts.Store == nil {
		opts.Store = memory.New()
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Processor == nil {
		opts.Processor = processor.New(opts.Store, opts.Logger)
	}
	b, err := newBuiltins(m, opts.Workspace)
	if err != nil {
		return nil, err
	}
	p := &Pool{manifest: m, store: opts.Store, proc: opts.Processor, nodes: map[string]spawn.Node{}, log: opts.Logger, builtins: b}
	if err := p.build(m, opts); err != nil {
		b.close()
		return nil, err
	}
	return p, nil
}

// build makes the pool's nodes.
func (p *Pool) build(m *config.Manifest, opts Options) error {
	if sh, ok := opts.Hooks.(SessionHooks); ok {
		p.sessions = sh
	} else if sh, ok := opts.Lifecycle.(SessionHooks); ok {
		p.sessions = sh
	}
	p.rt = spawn.NewRuntime(spawn.Config{
		Store: opts.Store,
		Limits: spawn.Limits{
			MaxDepth: m.Limits.MaxDepth, MaxChildren: m.Limits.MaxChildren,
			MaxSpawns: m.Limits.MaxSpawns, Timeout: m.Limits.SpawnTimeout,
		},
		Lifecycle: opts.Lifecycle,
		Logger:    opts.Logger,
		Lookup:    func(name string) (spawn.Node, bool) { n, ok := p.nodes[name]; return n, ok },
		Names:     func() []string { return p.order },
	})
	for _, name := range m.AgentOrder {
		a := m.Agents[name]
		mdl, err := NewModel(a.Model)
		if err != nil {
			return fmt.Errorf("agent %s: %w", name, err)
		}
		var tools []tool.Tool
		for _, ts := range a.Toolsets {
			got, err := p.builtins.tools(ts.Type)
			if err != nil {
				return fmt.Errorf("agent %s: %w", name, err)
			}
			tools = append(tools, got...)
		}
		for _, w := range a.Workers {
			desc := ""
			if wa, ok := m.Agents[w.Name]; ok {
				desc = wa.Description
			} else if wt, ok := m.Teams[w.Name]; ok {
				desc = wt.Description
			}
			tools = append(tools, spawn.WorkerTool(w.Name, desc, spawn.WorkerOptions{
				PassMessageHistory: w.PassMessageHistory, ResetHistoryOnRun: w.ResetHistoryOnRun, History: agent.HistoryFrom,
			}))
		}
		tools = append(tools, opts.ExtraTools...)
		maxTurns := a.MaxTurns
		if maxTurns == 0 {
			maxTurns = m.Limits.MaxTurns
		}
		ag, err := agent.New(agent.Config{
			Name: name, Description: a.Description, SystemPrompt: a.SystemPrompt, Model: mdl,
			Tools: tools, Toolsets: p.builtins.mcpToolsets(m, a), MaxTurns: maxTurns, Hooks: opts.Hooks,
		})
		if err != nil {
			return err
		}
		p.nodes[name] = ag
		p.order = append(p.order, name)
	}
	for _, name := range m.TeamOrder {
		t := m.Teams[name]
		tm, err := team.New(team.Config{
			Name: name, Description: t.Description, Mode: team.Mode(t.Mode), Members: t.Members,
			SharedPrompt: t.SharedPrompt, RequireAll: t.RequireAll,
		})
		if err != nil {
			return err
		}
		p.nodes[name] = tm
		p.order = append(p.order, name)
	}
	return nil
}

// Manifest returns the pool's manifest.
func (p *Pool) Manifest() *config.Manifest { return p.manifest }

// Store returns the pool's session store.
func (p *Pool) Store() session.Store { return p.store }

// Processor returns the session-tree processor every root stream goes
// through.
func (p *Pool) Processor() *processor.Processor { return p.proc }

// Runtime returns the spawn runtime (for manual spawns, Inject, tasks).
func (p *Pool) Runtime() *spawn.Runtime { return p.rt }

// Node returns a node by name.
func (p *Pool) Node(name string) (spawn.Node, bool) { n, ok := p.nodes[name]; return n, ok }

// NodeNames lists the nodes: agents in file order, then teams.
func (p *Pool) NodeNames() []string { return append([]string(nil), p.order...) }

// DefaultNode is the node a run without a name starts.
func (p *Pool) DefaultNode() string { return p.manifest.EntryPoint() }

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
}

// RunResult is how a root run ended.
type RunResult struct {
	SessionID  string
	Result     spawn.Result
	TotalUsage event.Usage
	TotalCost  float64
}

// recorder passes each event through the run's processor.Stream (which
// appends it to the log of the session that produced it and, when someone
// watches, projects the session tree) and on to the caller, under one lock
// so that the store, the processor's subscribers and the consumer all see
// the same order.
type recorder struct {
	mu     sync.Mutex
	stream *processor.Stream
	next   event.Sink
	ctx    context.Context
}

func (r *recorder) Emit(e event.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stream.Record(r.ctx, e)
	r.next.Emit(e)
}

// RunSink runs a node as a root run, emitting every event to sink, and
// returns when the run and all of its children have ended. The error is
// non-nil only when the run could not start (unknown node or session,
// store failure); how the run ended is in RunResult.Result.
func (p *Pool) RunSink(ctx context.Context, req RunRequest, sink event.Sink) (RunResult, error) {
	name := req.Node
	if name == "" {
		name = p.DefaultNode()
	}
	node, ok := p.nodes[name]
	if !ok {
		return RunResult{}, fmt.Errorf("%w %q; available: %v", ErrUnknownNode, name, p.order)
	}
	var (
		sess    session.Session
		history []model.Message
		err     error
	)
	now := time.Now()
	if req.SessionID != "" {
		sess, err = p.store.GetSession(ctx, req.SessionID)
		if err != nil {
			return RunResult{}, err
		}
		if p.rt.Running(sess.ID) {
			return RunResult{}, fmt.Errorf("session %s is already running", sess.ID)
		}
		stored, err := p.store.Messages(ctx, sess.ID)
		if err != nil {
			return RunResult{}, err
		}
		for _, m := range stored {
			history = append(history, m.Message)
		}
		if err := p.store.UpdateSession(ctx, sess.ID, func(s *session.Session) { s.Status = session.StatusRunning; s.StopReason = "" }); err != nil {
			return RunResult{}, err
		}
	} else {
		sid := req.NewSessionID
		if sid == "" {
			sid = id.DescendingAt(id.Session, now)
		}
		sess = session.Session{
			ID: sid, AgentName: name, SourceType: node.SourceType(), Title: title(req.Prompt),
			Status: session.StatusRunning, CreatedAt: now, UpdatedAt: now,
		}
		if err := p.store.CreateSession(ctx, sess); err != nil {
			return RunResult{}, err
		}
	}
	// What the run did is recorded even when it was cancelled.
	persist := spawn.WithoutCancel(ctx)
	rec := &recorder{stream: p.proc.Stream(sess.ID), next: sink, ctx: persist}
	inv := p.rt.NewRoot(sess, id.AscendingAt(id.Run, now), req.Prompt, history, rec)
	if p.sessions != nil {
		source := "startup"
		if req.SessionID != "" {
			source = "resume"
		}
		p.sessions.SessionStart(spawn.WithInvocation(ctx, inv), sess, source)
	}
	res := p.runRoot(ctx, node, inv)
	left := p.rt.Release(inv)
	if len(left) > 0 {
		msgs := make([]session.Message, len(left))
		for i, c := range left {
			msgs[i] = session.Message{ID: id.Ascending(id.Message), CreatedAt: time.Now(), Message: model.Message{Role: model.RoleUser, Parts: []model.Part{{Kind: model.PartText, Text: c}}, Synthetic: true}}
		}
		if err := p.store.AppendMessages(persist, sess.ID, msgs...); err != nil {
			p.log.Warn("store undelivered injections", "session", sess.ID, "err", err)
		}
	}
	childUsage, childCost := inv.ChildTotals()
	out := RunResult{SessionID: sess.ID, Result: res}
	errText := ""
	if res.Err != nil {
		errText = res.Err.Error()
	}
	// The closure escapes (it goes through the Store interface): it
	// captures copies that are never written again and hands its results
	// back through one small value, so that res and out stay on the stack.
	stop, usage, cost, dur := res.StopReason, res.Usage, res.Cost, time.Since(now).Milliseconds()
	totals := &struct {
		usage event.Usage
		cost  float64
	}{}
	err = p.store.UpdateSession(persist, sess.ID, func(s *session.Session) {
		s.Status = session.StatusFromStop(stop)
		s.StopReason = stop
		s.Usage.Add(usage)
		s.Cost += cost
		s.TotalUsage.Add(usage)
		s.TotalUsage.Add(childUsage)
		s.TotalCost += cost + childCost
		s.DurationMS = dur
		if errText != "" {
			if s.Metadata == nil {
				s.Metadata = map[string]any{}
			}
			s.Metadata["error"] = errText
		}
		totals.usage, totals.cost = s.TotalUsage, s.TotalCost
	})
	out.TotalUsage, out.TotalCost = totals.usage, totals.cost
	if err != nil {
		p.log.Warn("store run end", "session", sess.ID, "err", err)
	}
	if p.sessions != nil {
		p.sessions.SessionEnd(spawn.WithInvocation(persist, inv), sess, res.StopReason)
	}
	return out, nil
}

func (p *Pool) runRoot(ctx context.Context, node spawn.Node, inv *spawn.Invocation) (res spawn.Result) {
	defer func() {
		if r := recover(); r != nil {
			p.log.Error("run panicked", "session", inv.Session.ID, "panic", r, "stack", string(debug.Stack()))
			inv.Sink.Emit(event.RunError{Message: fmt.Sprintf("internal error: %v", r), Code: "panic", RunID: inv.RunID, AgentName: node.Name()})
			res = spawn.Result{StopReason: event.StopError, Err: fmt.Errorf("panic: %v", r)}
		}
	}()
	res = node.Run(inv.RunContext(ctx), inv)
	if res.StopReason == "" {
		res.StopReason = event.StopCompleted
	}
	return res
}

// Run runs a node as a root run and yields its events. Stopping the
// iteration early cancels the run and waits for it to wind down. A non-nil
// error is yielded last, only when the run could not start.
func (p *Pool) Run(ctx context.Context, req RunRequest) iter.Seq2[event.Event, error] {
	return func(yield func(event.Event, error) bool) {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		ch := make(chan event.Event, 256)
		gone := make(chan struct{})
		var runErr error
		go func() {
			defer close(ch)
			_, runErr = p.RunSink(ctx, req, event.SinkFunc(func(e event.Event) {
				select {
				case ch <- e:
				case <-gone:
				}
			}))
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

// Close stops the pool's background shells and MCP servers, then flushes
// and closes the store.
func (p *Pool) Close() error {
	return errors.Join(p.builtins.close(), p.store.Flush(context.Background()), p.store.Close())
}

// Workspace returns the directory the pool's file and shell tools act in.
func (p *Pool) Workspace() *workspace.Workspace { return p.builtins.ws }

// MCP returns the pool's MCP server manager, nil when the manifest declares
// no server.
func (p *Pool) MCP() *mcp.Manager { return p.builtins.mcp }
