package spawn_test

import (
	"context"
	"encoding/json"
	"iter"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentpool/agentpool/agent"
	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/event/eventtest"
	"github.com/agentpool/agentpool/id"
	"github.com/agentpool/agentpool/model"
	"github.com/agentpool/agentpool/pool"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/session/memory"
	"github.com/agentpool/agentpool/spawn"
	"github.com/agentpool/agentpool/tool"
)

// call is a tool call a fnModel makes.
type call struct {
	name string
	args map[string]any
}

// reply is one response of a fnModel.
type reply struct {
	text  string
	calls []call
	err   string
}

// fnModel answers with whatever fn decides for the request; it records
// every request it receives. turn counts the assistant messages since the
// last prompt a user typed.
type fnModel struct {
	fn   func(ctx context.Context, turn int, req *model.Request) reply
	mu   sync.Mutex
	reqs []model.Request
}

func newFnModel(fn func(ctx context.Context, turn int, req *model.Request) reply) *fnModel {
	return &fnModel{fn: fn}
}

func (m *fnModel) ID() string { return "fn" }

func (m *fnModel) requests() []model.Request {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.reqs)
}

func (m *fnModel) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
	return func(yield func(model.Chunk, error) bool) {
		m.mu.Lock()
		m.reqs = append(m.reqs, model.Request{System: req.System, Messages: slices.Clone(req.Messages), Tools: req.Tools})
		m.mu.Unlock()
		r := m.fn(ctx, turnOf(req.Messages), req)
		if ctx.Err() != nil {
			yield(model.Chunk{}, context.Cause(ctx))
			return
		}
		if r.text != "" && !yield(model.Chunk{Kind: model.ChunkText, Text: r.text}, nil) {
			return
		}
		if r.err != "" {
			yield(model.Chunk{}, errorString(r.err))
			return
		}
		for k, c := range r.calls {
			args, _ := json.Marshal(c.args)
			if c.args == nil {
				args = []byte("{}")
			}
			if !yield(model.Chunk{Kind: model.ChunkToolCall, Index: k, ToolCallID: id.Ascending(id.ToolCall), ToolName: c.name, ArgsDelta: string(args)}, nil) {
				return
			}
		}
		if !yield(model.Chunk{Kind: model.ChunkUsage, Usage: event.Usage{InputTokens: 1, OutputTokens: 1}}, nil) {
			return
		}
		yield(model.Chunk{Kind: model.ChunkFinish}, nil)
	}
}

type errorString string

func (e errorString) Error() string { return string(e) }

func turnOf(msgs []model.Message) int {
	n := 0
	for i := len(msgs) - 1; i >= 0; i-- {
		switch {
		case msgs[i].Role == model.RoleAssistant:
			n++
		case msgs[i].Role == model.RoleUser && !msgs[i].Synthetic:
			return n
		}
	}
	return n
}

// toolResults returns the tool results of the last tool message of msgs.
func toolResults(msgs []model.Message) []model.Part {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == model.RoleTool {
			return msgs[i].Parts
		}
	}
	return nil
}

// blockingModel blocks every request until ctx ends, after signalling on
// started (when not nil).
func blockingModel(started chan<- string, name string) *fnModel {
	return newFnModel(func(ctx context.Context, _ int, _ *model.Request) reply {
		if started != nil {
			started <- name
		}
		<-ctx.Done()
		return reply{}
	})
}

// textModel always answers text.
func textModel(text string) *fnModel {
	return newFnModel(func(context.Context, int, *model.Request) reply { return reply{text: text} })
}

// harness is a runtime with hand-made nodes.
type harness struct {
	t     *testing.T
	store *memory.Store
	rt    *spawn.Runtime
	mu    sync.Mutex
	nodes map[string]spawn.Node
	order []string
}

func newHarness(t *testing.T, l spawn.Limits) *harness {
	h := &harness{t: t, store: memory.New(), nodes: map[string]spawn.Node{}}
	h.rt = spawn.NewRuntime(spawn.Config{
		Store: h.store, Limits: l,
		Lookup: func(name string) (spawn.Node, bool) {
			h.mu.Lock()
			defer h.mu.Unlock()
			n, ok := h.nodes[name]
			return n, ok
		},
		Names: func() []string {
			h.mu.Lock()
			defer h.mu.Unlock()
			return slices.Clone(h.order)
		},
	})
	return h
}

func (h *harness) add(n spawn.Node) spawn.Node {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.nodes[n.Name()] = n
	h.order = append(h.order, n.Name())
	return n
}

// agent adds an agent with the subagent tools and the given extra tools.
func (h *harness) agent(name string, m model.Model, tools ...tool.Tool) *agent.Agent {
	h.t.Helper()
	a, err := agent.New(agent.Config{Name: name, Description: name + " agent", Model: m, Tools: append(spawn.SubagentTools(), tools...)})
	if err != nil {
		h.t.Fatal(err)
	}
	h.add(a)
	return a
}

type runOut struct {
	root string
	res  spawn.Result
	evs  []event.Event
}

// run runs a node as a root run (as the pool does) and checks the stream.
func (h *harness) run(ctx context.Context, name, prompt string) runOut {
	h.t.Helper()
	h.mu.Lock()
	node, ok := h.nodes[name]
	h.mu.Unlock()
	if !ok {
		h.t.Fatalf("no node %s", name)
	}
	now := time.Now()
	sess := session.Session{ID: id.Descending(id.Session), AgentName: name, SourceType: node.SourceType(), Status: session.StatusRunning, CreatedAt: now, UpdatedAt: now}
	if err := h.store.CreateSession(ctx, sess); err != nil {
		h.t.Fatal(err)
	}
	sink, events := eventtest.Collect()
	inv := mustRoot(h.t)(h.rt.NewRoot(sess, id.Ascending(id.Run), prompt, nil, sink))
	res := node.Run(spawn.WithInvocation(ctx, inv), inv)
	h.rt.Release(inv)
	out := runOut{root: sess.ID, res: res, evs: events()}
	if err := eventtest.CheckInvariants(sess.ID, out.evs); err != nil {
		h.t.Errorf("stream of %s: %v", name, err)
	}
	return out
}

func mustPool(t *testing.T, yaml string, opts pool.Options) *pool.Pool {
	t.Helper()
	m, err := config.Parse("test.yaml", []byte(yaml))
	if err != nil {
		t.Fatalf("manifest: %v", err)
	}
	p, err := pool.New(m, opts)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// runPool runs a pool node and checks the stream.
func runPool(t *testing.T, ctx context.Context, p *pool.Pool, node, prompt string) (pool.RunResult, []event.Event) {
	t.Helper()
	sink, events := eventtest.Collect()
	res, err := p.RunSink(ctx, pool.RunRequest{Node: node, Prompt: prompt}, sink)
	if err != nil {
		t.Fatal(err)
	}
	evs := events()
	if err := eventtest.CheckInvariants(res.SessionID, evs); err != nil {
		t.Errorf("stream of %s: %v", node, err)
	}
	return res, evs
}

// produced is one event of a root stream with the session that produced it.
type produced struct {
	session string
	ev      event.Event
}

func unwrapAll(root string, evs []event.Event) []produced {
	out := make([]produced, len(evs))
	for i, e := range evs {
		s, inner := event.Unwrap(root, e)
		out[i] = produced{s, inner}
	}
	return out
}

func starts(root string, evs []event.Event) []event.SpawnSessionStart {
	var out []event.SpawnSessionStart
	for _, p := range unwrapAll(root, evs) {
		if s, ok := p.ev.(event.SpawnSessionStart); ok {
			out = append(out, s)
		}
	}
	return out
}

func ends(root string, evs []event.Event) map[string]event.SpawnSessionEnd {
	out := map[string]event.SpawnSessionEnd{}
	for _, p := range unwrapAll(root, evs) {
		if e, ok := p.ev.(event.SpawnSessionEnd); ok {
			out[e.ChildSessionID] = e
		}
	}
	return out
}

// endOf returns the end of the only child named name.
func endOf(t *testing.T, root string, evs []event.Event, name string) event.SpawnSessionEnd {
	t.Helper()
	var found []event.SpawnSessionEnd
	for _, e := range ends(root, evs) {
		if e.SourceName == name {
			found = append(found, e)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d ends of %s, want 1", len(found), name)
	}
	return found[0]
}

// toolCompletes returns the tool_call_complete events of the named tool.
func toolCompletes(root string, evs []event.Event, toolName string) []event.ToolCallComplete {
	var out []event.ToolCallComplete
	for _, p := range unwrapAll(root, evs) {
		if c, ok := p.ev.(event.ToolCallComplete); ok && c.ToolName == toolName {
			out = append(out, c)
		}
	}
	return out
}

func sessionsNamed(t *testing.T, st session.Store, name string) []session.Session {
	t.Helper()
	all, err := st.ListSessions(context.Background(), session.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []session.Session
	for _, s := range all {
		if s.AgentName == name {
			out = append(out, s)
		}
	}
	return out
}

func contains(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

// mustRoot returns a function that returns the invocation of a NewRoot
// that must succeed: mustRoot(t)(rt.NewRoot(...)).
func mustRoot(t testing.TB) func(*spawn.Invocation, error) *spawn.Invocation {
	return func(inv *spawn.Invocation, err error) *spawn.Invocation {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return inv
	}
}
