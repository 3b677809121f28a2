package hook_test

import (
	"context"
	"iter"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/agentpool/agentpool/agent"
	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/hook"
	"github.com/agentpool/agentpool/id"
	"github.com/agentpool/agentpool/model"
	"github.com/agentpool/agentpool/model/testmodel"
	"github.com/agentpool/agentpool/record"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/session/memory"
	"github.com/agentpool/agentpool/spawn"
	"github.com/agentpool/agentpool/tool"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// recModel records every request (a deep copy) before delegating.
type recModel struct {
	inner model.Model
	mu    sync.Mutex
	reqs  []model.Request
}

func (m *recModel) ID() string { return m.inner.ID() }

func (m *recModel) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
	m.mu.Lock()
	m.reqs = append(m.reqs, model.Request{System: req.System, Messages: model.CloneMessages(req.Messages)})
	m.mu.Unlock()
	return m.inner.Stream(ctx, req)
}

func (m *recModel) requests() []model.Request {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]model.Request(nil), m.reqs...)
}

// texts joins every text part of a request.
func texts(r model.Request) string {
	var b strings.Builder
	for _, m := range r.Messages {
		for _, p := range m.Parts {
			b.WriteString(p.Text)
			b.WriteString("\n")
		}
	}
	return b.String()
}

func scripted(t *testing.T, turns ...testmodel.Turn) *recModel {
	t.Helper()
	m, err := testmodel.New(testmodel.Config{Turns: turns})
	if err != nil {
		t.Fatal(err)
	}
	return &recModel{inner: m}
}

func callTurn(name string, args map[string]any) testmodel.Turn {
	return testmodel.Turn{ToolCalls: []testmodel.ToolCall{{Name: name, Args: args}}}
}

func text(s string) testmodel.Turn { return testmodel.Turn{Text: s} }

// harness is a spawn runtime with agents wired to a registry, without the
// pool (so that models can be recording ones).
type harness struct {
	t     *testing.T
	store *memory.Store
	rt    *spawn.Runtime
	reg   *hook.Registry
	mu    sync.Mutex
	nodes map[string]spawn.Node
	names []string
}

func newHarness(t *testing.T, reg *hook.Registry, limits spawn.Limits) *harness {
	h := &harness{t: t, store: memory.New(), reg: reg, nodes: map[string]spawn.Node{}}
	var lc spawn.Lifecycle
	if reg != nil {
		lc = reg
	}
	h.rt = spawn.NewRuntime(spawn.Config{
		Store: h.store, Limits: limits, Lifecycle: lc,
		Lookup: func(n string) (spawn.Node, bool) {
			h.mu.Lock()
			defer h.mu.Unlock()
			node, ok := h.nodes[n]
			return node, ok
		},
		Names: func() []string { return h.names },
	})
	return h
}

func (h *harness) add(node spawn.Node) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.nodes[node.Name()] = node
	h.names = append(h.names, node.Name())
}

func (h *harness) agent(name string, m model.Model, tools ...tool.Tool) *agent.Agent {
	h.t.Helper()
	var hooks agent.Hooks
	if h.reg != nil {
		hooks = h.reg
	}
	a, err := agent.New(agent.Config{Name: name, Model: m, Tools: tools, Hooks: hooks, MaxTurns: 20})
	if err != nil {
		h.t.Fatal(err)
	}
	h.add(a)
	return a
}

// sink collects events.
type sink struct {
	mu  sync.Mutex
	evs []event.Event
}

func (s *sink) Emit(e event.Event) {
	s.mu.Lock()
	s.evs = append(s.evs, e)
	s.mu.Unlock()
}

func (s *sink) events() []event.Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]event.Event(nil), s.evs...)
}

// root registers a root session and returns its invocation. Its stream
// goes through a recorder into the store, then to out, as in a pool.
func (h *harness) root(name, prompt string, out event.Sink) *spawn.Invocation {
	h.t.Helper()
	now := time.Now()
	s := session.Session{ID: id.Descending(id.Session), AgentName: name, SourceType: event.SourceAgent, Status: session.StatusRunning, CreatedAt: now, UpdatedAt: now}
	if err := h.store.CreateSession(context.Background(), s); err != nil {
		h.t.Fatal(err)
	}
	rec := record.New(h.store, nil).Open(context.Background(), s.ID, out)
	inv, err := h.rt.NewRoot(s, id.Ascending(id.Run), prompt, nil, rec)
	if err != nil {
		h.t.Fatal(err)
	}
	return inv
}

// run runs a node as a root run and returns its result, session id and
// events.
func (h *harness) run(ctx context.Context, name, prompt string) (spawn.Result, string, []event.Event) {
	h.t.Helper()
	var out sink
	inv := h.root(name, prompt, &out)
	h.mu.Lock()
	node := h.nodes[name]
	h.mu.Unlock()
	res := node.Run(spawn.WithInvocation(ctx, inv), inv)
	h.rt.Release(inv)
	return res, inv.Session.ID, out.events()
}

// messages returns the stored conversation of a session.
func (h *harness) messages(sid string) []session.Message {
	h.t.Helper()
	ms, err := h.store.Messages(context.Background(), sid)
	if err != nil {
		h.t.Fatal(err)
	}
	return ms
}

// toolResults returns the tool result parts of a stored conversation.
func toolResults(ms []session.Message) []model.Part {
	var out []model.Part
	for _, m := range ms {
		for _, p := range m.Parts {
			if p.Kind == model.PartToolResult {
				out = append(out, p)
			}
		}
	}
	return out
}

// probe is a tool that records its calls.
type probe struct {
	name  string
	mu    sync.Mutex
	calls []string
}

func (p *probe) Info() tool.Info {
	return tool.Info{Name: p.name, Description: "probe", Parameters: []byte(`{"type":"object"}`)}
}

func (p *probe) Call(_ context.Context, c tool.Call) (tool.Result, error) {
	p.mu.Lock()
	p.calls = append(p.calls, string(c.Args))
	p.mu.Unlock()
	return tool.Result{Content: "probe ran with " + string(c.Args)}, nil
}

func (p *probe) ran() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.calls...)
}

// lifecycleLog records subagent starts and ends in order.
type lifecycleLog struct {
	mu  sync.Mutex
	log []string // "start:<id>" / "end:<id>:<stop>"
}

func (l *lifecycleLog) add(s string) {
	l.mu.Lock()
	l.log = append(l.log, s)
	l.mu.Unlock()
}

func (l *lifecycleLog) entries() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.log...)
}

func (l *lifecycleLog) register(reg *hook.Registry) {
	reg.OnSubagentStart.Register(func(_ context.Context, s hook.SubagentStart) error {
		l.add("start:" + s.ID)
		return nil
	})
	reg.OnSubagentEnd.Register(func(_ context.Context, e hook.SubagentEnd) error {
		l.add("end:" + e.ID + ":" + string(e.StopReason))
		return nil
	})
}
