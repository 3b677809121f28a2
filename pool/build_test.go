package pool_test

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/agentpool/agentpool/agent"
	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/event/eventtest"
	"github.com/agentpool/agentpool/hook"
	"github.com/agentpool/agentpool/model"
	"github.com/agentpool/agentpool/pool"
	"github.com/agentpool/agentpool/spawn"
	"github.com/agentpool/agentpool/team"
	"github.com/agentpool/agentpool/tool"
)

// shout is a custom node: it answers with its prompt in capitals.
type shout struct{}

func (shout) Name() string                 { return "shout" }
func (shout) Description() string          { return "Repeats the prompt in capitals." }
func (shout) SourceType() event.SourceType { return event.SourceAgent }
func (shout) ModelID() string              { return "" }

func (shout) Run(ctx context.Context, inv *spawn.Invocation) spawn.Result {
	out := strings.ToUpper(inv.Prompt)
	inv.Sink.Emit(event.RunStarted{SessionID: inv.Session.ID, RunID: inv.RunID, AgentName: "shout", ParentSessionID: inv.Session.ParentID})
	inv.Sink.Emit(event.StreamComplete{Message: event.Message{Role: "assistant", Content: out, FinishReason: "stop"}})
	return spawn.Result{Output: out, StopReason: event.StopCompleted}
}

// askThen calls the worker tool ask_<worker> and answers with the worker's
// output.
func askThen(worker, prompt string) model.Model {
	args, _ := json.Marshal(map[string]string{"prompt": prompt})
	return toolCaller{Tool: "ask_" + worker, Args: string(args), Answer: func(r model.Part) string {
		var out struct{ Output string }
		json.Unmarshal([]byte(r.Text), &out)
		return "got " + out.Output
	}}
}

// run runs node of p, checks the stream's invariants and returns the
// result.
func run(t *testing.T, p *pool.Pool, node, prompt string) spawn.Result {
	t.Helper()
	sink, events := eventtest.Collect()
	res, err := p.RunSink(context.Background(), pool.RunRequest{Node: node, Prompt: prompt}, sink)
	if err != nil {
		t.Fatal(err)
	}
	if err := eventtest.CheckInvariants(res.SessionID, events()); err != nil {
		t.Fatal(err)
	}
	return res.Result
}

func build(t *testing.T, cfg pool.Config, opts pool.Options) *pool.Pool {
	t.Helper()
	p, err := pool.Build(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

func TestBuildRejects(t *testing.T) {
	m := toolCaller{}
	lead := func(mod func(*pool.AgentSpec)) pool.AgentSpec {
		a := pool.AgentSpec{Name: "lead", Model: m}
		if mod != nil {
			mod(&a)
		}
		return a
	}
	tests := []struct {
		name string
		cfg  pool.Config
		opts pool.Options
		want []string
	}{
		{"undefined worker", pool.Config{Agents: []pool.AgentSpec{lead(func(a *pool.AgentSpec) { a.Workers = []pool.WorkerSpec{{Name: "ghost"}} })}},
			pool.Options{}, []string{`agent "lead": Workers[0]: unknown agent, team or node "ghost" (defined: lead)`}},
		{"own worker", pool.Config{Agents: []pool.AgentSpec{lead(func(a *pool.AgentSpec) { a.Workers = []pool.WorkerSpec{{Name: "lead"}} })}},
			pool.Options{}, []string{`agent "lead": Workers[0]: agent "lead" cannot be its own worker`}},
		{"undefined team member", pool.Config{Agents: []pool.AgentSpec{lead(nil)}, Teams: []pool.TeamSpec{{Name: "crew", Mode: team.Parallel, Members: []string{"lead", "nobody"}}}},
			pool.Options{}, []string{`team "crew": Members[1]: unknown agent, team or node "nobody" (defined: lead, crew)`}},
		{"duplicate name", pool.Config{Agents: []pool.AgentSpec{lead(nil), lead(nil), {Name: "other", Model: m}}, Teams: []pool.TeamSpec{{Name: "lead", Mode: team.Parallel, Members: []string{"other"}}}},
			pool.Options{}, []string{
				`agent "lead": name is already used by an agent "lead" (agents, teams and nodes share one namespace)`,
				`team "lead": name is already used by an agent "lead" (agents, teams and nodes share one namespace)`,
			}},
		{"duplicate node name", pool.Config{Agents: []pool.AgentSpec{{Name: "shout", Model: m}}, Nodes: []spawn.Node{shout{}}},
			pool.Options{}, []string{`node "shout": name is already used by an agent "shout" (agents, teams and nodes share one namespace)`}},
		{"missing model", pool.Config{Agents: []pool.AgentSpec{lead(func(a *pool.AgentSpec) { a.Model = nil })}},
			pool.Options{}, []string{`agent "lead": Model: a model is required`}},
		{"unknown builtin toolset", pool.Config{Agents: []pool.AgentSpec{lead(func(a *pool.AgentSpec) { a.Builtin = []string{"plan", "files", "plan"} })}},
			pool.Options{}, []string{
				`agent "lead": Builtin[1]: unknown toolset type "files" (known: subagent, file_access, execution, plan, fetch, skills, code, search)`,
				`agent "lead": Builtin[2]: duplicate toolset "plan"`,
			}},
		{"undefined default", pool.Config{Agents: []pool.AgentSpec{lead(nil)}, Default: "boss"},
			pool.Options{}, []string{`Config.Default: unknown agent, team or node "boss" (defined: lead)`}},
		{"team cycle", pool.Config{Agents: []pool.AgentSpec{lead(nil)}, Teams: []pool.TeamSpec{
			{Name: "a", Mode: team.Parallel, Members: []string{"lead", "b"}},
			{Name: "b", Mode: team.Sequential, Members: []string{"a"}},
			{Name: "c", Mode: team.Sequential, Members: []string{"c"}},
		}}, pool.Options{}, []string{
			`team "c": Members[0]: team "c" cannot contain itself`,
			`team "b": Members[0]: team cycle: a -> b -> a`,
		}},
		{"team mode and members", pool.Config{Agents: []pool.AgentSpec{lead(nil)}, Teams: []pool.TeamSpec{{Name: "t1"}, {Name: "t2", Mode: "round-robin", Members: []string{"lead"}}}},
			pool.Options{}, []string{
				`team "t1": Mode: a mode is required (team.Parallel or team.Sequential)`,
				`team "t1": Members: a team needs at least one member`,
				`team "t2": Mode: unknown team mode "round-robin" (known: parallel, sequential)`,
			}},
		{"names", pool.Config{Agents: []pool.AgentSpec{{Model: m}, {Name: "a b", Model: m}}, Nodes: []spawn.Node{nil}},
			pool.Options{}, []string{
				`Config.Agents[0]: Name is required`,
				`agent "a b": invalid name: names start with a letter and hold only letters, digits, "_" and "-"`,
				`Config.Nodes[0]: nil node`,
			}},
		{"nothing", pool.Config{}, pool.Options{}, []string{`no agent, team or node: at least one is required`}},
		{"tool approval and limits", pool.Config{
			Agents: []pool.AgentSpec{lead(func(a *pool.AgentSpec) { a.ToolApproval = map[string]string{"Bash": "maybe"}; a.MaxTurns = -1 })},
			Limits: config.Limits{MaxDepth: -1},
		}, pool.Options{}, []string{
			`agent "lead": MaxTurns: must not be negative, got -1`,
			`agent "lead": ToolApproval["Bash"]: unknown approval "maybe" (known: allow, ask, deny)`,
			`Config.Limits.MaxDepth: must not be negative`,
		}},
		{"duplicate tool", pool.Config{Agents: []pool.AgentSpec{lead(func(a *pool.AgentSpec) { a.Tools = []tool.Tool{getWeather, getWeather} })}},
			pool.Options{}, []string{`agent lead: duplicate tool "get_weather"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := pool.Build(tt.cfg, tt.opts)
			if err == nil {
				p.Close()
				t.Fatal("Build succeeded")
			}
			if got := strings.Split(err.Error(), "\n"); !slices.Equal(got, tt.want) {
				t.Errorf("errors:\n%s\nwant:\n%s", err, strings.Join(tt.want, "\n"))
			}
		})
	}
}

func TestBuildCustomNode(t *testing.T) {
	p := build(t, pool.Config{
		Agents: []pool.AgentSpec{{Name: "lead", Model: askThen("shout", "hello"), Workers: []pool.WorkerSpec{{Name: "shout"}}}},
		Teams:  []pool.TeamSpec{{Name: "echoes", Mode: team.Sequential, Members: []string{"shout", "shout"}}},
		Nodes:  []spawn.Node{shout{}},
	}, pool.Options{})
	if got := p.NodeNames(); !slices.Equal(got, []string{"lead", "echoes", "shout"}) {
		t.Errorf("NodeNames = %v", got)
	}
	if p.DefaultNode() != "lead" {
		t.Errorf("DefaultNode = %q", p.DefaultNode())
	}
	if res := run(t, p, "shout", "run me"); res.Output != "RUN ME" {
		t.Errorf("shout: %+v", res)
	}
	if res := run(t, p, "", "go"); res.Output != "got HELLO" {
		t.Errorf("lead: %+v", res)
	}
	if res := run(t, p, "echoes", "twice"); res.StopReason != event.StopCompleted || !strings.Contains(res.Output, "TWICE") {
		t.Errorf("echoes: %+v", res)
	}
	lead, _ := p.Node("lead")
	if names := lead.(*agent.Agent).ToolNames(); !slices.Equal(names, []string{"ask_shout"}) {
		t.Errorf("lead's tools: %v", names)
	}
}

func TestBuildOnlyNodes(t *testing.T) {
	p := build(t, pool.Config{Nodes: []spawn.Node{shout{}}}, pool.Options{})
	if p.DefaultNode() != "shout" || p.Manifest() == nil {
		t.Fatalf("DefaultNode %q, Manifest %v", p.DefaultNode(), p.Manifest())
	}
	if res := run(t, p, "", "x"); res.Output != "X" {
		t.Errorf("%+v", res)
	}
}

func TestBuildToolsPerAgent(t *testing.T) {
	extra := tool.New("clock", "The time.", func(context.Context, tool.Call, struct{}) (tool.Result, error) {
		return tool.Result{Content: "noon"}, nil
	})
	cfg := weatherConfig()
	cfg.Agents[1].Builtin = []string{config.ToolsetPlan}
	p := build(t, cfg, pool.Options{ExtraTools: []tool.Tool{extra}})
	want := map[string][]string{
		"lead":       {"ask_forecaster", "clock"},
		"forecaster": {"get_weather", "TodoWrite", "clock"},
	}
	for name, tools := range want {
		n, _ := p.Node(name)
		if got := n.(*agent.Agent).ToolNames(); !slices.Equal(got, tools) {
			t.Errorf("%s's tools: %v, want %v", name, got, tools)
		}
	}
	m := p.Manifest()
	if a := m.Agents["lead"]; a == nil || a.Model.Model != "tool-caller" || len(a.Workers) != 1 || !a.Workers[0].ResetHistoryOnRun {
		t.Errorf("Manifest().Agents[lead] = %+v", a)
	}
	if m.Limits.MaxDepth != config.DefaultMaxDepth || m.Limits.MaxTurns != config.DefaultMaxTurns {
		t.Errorf("limits without defaults: %+v", m.Limits)
	}
}

func TestBuildToolApproval(t *testing.T) {
	cfg := weatherConfig()
	cfg.Agents[1].ToolApproval = map[string]string{"get_*": config.ApprovalDeny}
	reg := hook.New(hook.Options{})
	p := build(t, cfg, pool.Options{Hooks: reg})
	if got := reg.Approvals.Decide("forecaster", "get_weather"); got != config.ApprovalDeny {
		t.Errorf("policy %q", got)
	}
	if res := run(t, p, "", "Weather?"); !strings.Contains(res.Output, "cannot tell (tool get_weather denied: the tool_approval policy") {
		t.Errorf("the tool ran: %+v", res)
	}

	// The manifest's tool_approval reaches the registry through New alone.
	m, err := config.Parse("a.yaml", []byte("agents:\n  a:\n    model: test\n    tool_approval: {Bash: deny}\n"))
	if err != nil {
		t.Fatal(err)
	}
	reg = hook.New(hook.Options{})
	pm, err := pool.New(m, pool.Options{Hooks: reg})
	if err != nil {
		t.Fatal(err)
	}
	pm.Close()
	if got := reg.Approvals.Decide("a", "Bash"); got != config.ApprovalDeny {
		t.Errorf("manifest policy %q", got)
	}
}

// FromManifest, then Go additions: a tool for one agent of the manifest
// and a custom node as its worker.
func TestFromManifestThenBuild(t *testing.T) {
	m, err := config.Parse("a.yaml", []byte(`
default_agent: lead
agents:
  helper:
    model:
      type: scripted
      turns: [{tool_calls: [{name: get_weather, args: {city: Oslo}}]}, "helped"]
  lead:
    model:
      type: scripted
      turns: [{tool_calls: [{name: ask_helper, args: {prompt: x}}, {name: ask_shout, args: {prompt: y}}]}, "led"]
    workers: [{name: helper, reset_history_on_run: false}]
`))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := pool.FromManifest(m, nil)
	if err != nil {
		t.Fatal(err)
	}
	if w := cfg.Agents[1].Workers; len(w) != 1 || !w[0].KeepHistory {
		t.Fatalf("workers %+v", w)
	}
	cfg.Agents[0].Tools = append(cfg.Agents[0].Tools, getWeather)
	cfg.Agents[1].Workers = append(cfg.Agents[1].Workers, pool.WorkerSpec{Name: "shout"})
	cfg.Nodes = append(cfg.Nodes, shout{})
	p := build(t, cfg, pool.Options{})
	if p.DefaultNode() != "lead" {
		t.Errorf("DefaultNode %q", p.DefaultNode())
	}
	sink, events := eventtest.Collect()
	res, err := p.RunSink(context.Background(), pool.RunRequest{Prompt: "go"}, sink)
	if err != nil || res.Result.Output != "led" {
		t.Fatalf("%+v %v", res, err)
	}
	var done []string
	for _, e := range events() {
		if s, ok := e.(event.Subagent); ok {
			e = s.Event
		}
		if c, ok := e.(event.ToolCallComplete); ok && !c.IsError {
			done = append(done, c.AgentName+":"+c.ToolName)
		}
	}
	slices.Sort(done)
	if want := []string{"helper:get_weather", "lead:ask_helper", "lead:ask_shout"}; !slices.Equal(done, want) {
		t.Errorf("tool calls %v, want %v", done, want)
	}
}

// echoModel answers with "<Model>:<the prompt>".
type echoModel struct{ id string }

func (m echoModel) ID() string { return m.id }

func (m echoModel) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
	return func(yield func(model.Chunk, error) bool) {
		if yield(model.Chunk{Kind: model.ChunkText, Text: m.id + ":" + req.Messages[len(req.Messages)-1].Text()}, nil) {
			yield(model.Chunk{Kind: model.ChunkFinish, FinishReason: model.FinishStop}, nil)
		}
	}
}

// TestRegistry: a model type added to a Registry parses when the parser
// is given the registry's types and builds with the pool given the
// registry; another registry, or none, does not have it.
func TestRegistry(t *testing.T) {
	reg := pool.NewRegistry().AddModel("echo-test", func(spec config.ModelSpec) (model.Model, error) {
		if spec.Model == "" {
			return nil, fmt.Errorf("echo-test needs a model id")
		}
		return echoModel{id: spec.Model}, nil
	})
	if got, want := reg.ModelTypes(), []string{config.ModelTest, config.ModelScripted, config.ModelFallback, config.ModelInput, "echo-test"}; !slices.Equal(got, want) {
		t.Fatalf("ModelTypes = %v, want %v", got, want)
	}
	if slices.Contains(pool.NewRegistry().ModelTypes(), "echo-test") || slices.Contains(config.ModelTypes(), "echo-test") {
		t.Fatal("AddModel changed something besides its registry")
	}
	opts := config.Options{ModelTypes: reg.ModelTypes()}
	m, err := config.ParseWith("a.yaml", []byte(`
agents:
  a:
    model: {type: echo-test, model: parrot, base_url: "http://localhost:1"}
  b:
    model: echo-test:mynah
  c:
    model: {type: fallback, models: ["echo-test:owl"]}
`), opts)
	if err != nil {
		t.Fatal(err)
	}
	p, err := pool.New(m, pool.Options{Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for node, want := range map[string]string{"a": "parrot:hi", "b": "mynah:hi", "c": "owl:hi"} {
		if res := run(t, p, node, "hi"); res.Output != want {
			t.Errorf("%s: %q, want %q", node, res.Output, want)
		}
	}
	// Without the registry the manifest does not build, and the error says
	// how to wire the type in.
	if _, err := pool.New(m, pool.Options{}); err == nil || !strings.Contains(err.Error(), `agent a: model type "echo-test" is not wired into this program (wired: test, scripted, fallback, input); `+config.WiringHint) {
		t.Errorf("without the registry: %v", err)
	}

	// A key that does not apply to the type is still an error; a factory's
	// error names the agent.
	if _, err := config.ParseWith("a.yaml", []byte("agents:\n  a:\n    model: {type: echo-test, turns: [x]}\n"), opts); err == nil ||
		!strings.Contains(err.Error(), `field "turns" does not apply to echo-test models (only to scripted)`) {
		t.Errorf("turns on echo-test: %v", err)
	}
	m, err = config.ParseWith("a.yaml", []byte("agents:\n  a:\n    model: echo-test\n"), opts)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pool.New(m, pool.Options{Registry: reg}); err == nil || err.Error() != "agent a: echo-test needs a model id" {
		t.Errorf("factory error: %v", err)
	}

	_, err = reg.NewModel(config.ModelSpec{Type: "nope"})
	if err == nil || !strings.Contains(err.Error(), `model type "nope" is not wired into this program (wired: test, scripted, fallback, input, echo-test); `) {
		t.Errorf("unknown type: %v", err)
	}
	for _, bad := range []string{"", "my:type", "1x"} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("AddModel(%q) did not panic", bad)
				}
			}()
			pool.NewRegistry().AddModel(bad, func(config.ModelSpec) (model.Model, error) { return echoModel{}, nil })
		}()
	}
}

// Options.Hooks is a *hook.Registry: no interface to satisfy, nothing to
// assert. With one, a root node that is not an agent goes through its
// prompt and session points; without one (nil), runs need none of them
// and tool_approval is not enforced.
func TestOptionsHooksTyped(t *testing.T) {
	if f, _ := reflect.TypeFor[pool.Options]().FieldByName("Hooks"); f.Type != reflect.TypeFor[*hook.Registry]() {
		t.Fatalf("Options.Hooks is %v, want *hook.Registry", f.Type)
	}

	reg := hook.New(hook.Options{})
	var mu sync.Mutex
	var seen []string
	note := func(s string) {
		mu.Lock()
		seen = append(seen, s)
		mu.Unlock()
	}
	reg.OnSessionStart.Register(func(_ context.Context, s hook.SessionStart) error {
		note("start:" + s.Source)
		return nil
	})
	reg.OnPromptSubmit.Use(func(ctx context.Context, p hook.Prompt, next hook.Next[hook.Prompt, hook.PromptDecision]) hook.PromptDecision {
		note("prompt:" + p.Content)
		return next(ctx, p)
	})
	reg.OnSessionEnd.Register(func(_ context.Context, s hook.SessionEnd) error {
		note("end:" + string(s.Reason))
		return nil
	})
	p := build(t, pool.Config{Nodes: []spawn.Node{shout{}}}, pool.Options{Hooks: reg})
	if res := run(t, p, "shout", "hi"); res.Output != "HI" {
		t.Fatalf("output %q", res.Output)
	}
	mu.Lock()
	got := strings.Join(seen, " ")
	mu.Unlock()
	if got != "start:startup prompt:hi end:completed" {
		t.Errorf("hooks saw %q", got)
	}

	// No hooks: the same runs, and a policy nothing enforces.
	p = build(t, pool.Config{Nodes: []spawn.Node{shout{}}}, pool.Options{})
	if res := run(t, p, "shout", "hi"); res.Output != "HI" {
		t.Fatalf("output without hooks %q", res.Output)
	}
	cfg := weatherConfig()
	cfg.Agents[1].ToolApproval = map[string]string{"get_*": config.ApprovalDeny}
	p = build(t, cfg, pool.Options{})
	if res := run(t, p, "", "Weather?"); strings.Contains(res.Output, "denied") {
		t.Errorf("without hooks the policy was enforced: %+v", res)
	}
}

// lentSet is a toolset a caller lends to one run (RunRequest.Toolsets).
type lentSet struct {
	mu    sync.Mutex
	asked int
	tools []tool.Tool
}

func (s *lentSet) Name() string { return "lent" }

func (s *lentSet) Tools(context.Context) ([]tool.Tool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.asked++
	return s.tools, nil
}

// Toolsets a caller lends a run are a field of its request, not a value
// hidden in its context: the root and the children it spawns offer their
// tools for that run, and a later run of the same session that lends
// nothing does not.
func TestLentToolsetsAreExplicit(t *testing.T) {
	cfg := weatherConfig()
	cfg.Agents[1].Tools = nil // the forecaster's get_weather is lent only
	p := build(t, cfg, pool.Options{})
	set := &lentSet{tools: []tool.Tool{getWeather}}
	sink, _ := eventtest.Collect()
	res, err := p.RunSink(context.Background(), pool.RunRequest{Prompt: "Weather?", Toolsets: []tool.Toolset{set}}, sink)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Result.Output, "It is sunny in Paris") {
		t.Errorf("with the lent toolset: %q", res.Result.Output)
	}
	set.mu.Lock()
	asked := set.asked
	set.mu.Unlock()
	if asked != 2 {
		t.Errorf("the lent toolset was asked %d times, want 2 (lead and its worker)", asked)
	}

	res, err = p.RunSink(context.Background(), pool.RunRequest{Prompt: "Weather?", SessionID: res.SessionID}, sink)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Result.Output, "I cannot tell") {
		t.Errorf("without the lent toolset: %q", res.Result.Output)
	}
}

// TestUnwiredToolsets: the fetch toolset and MCP servers need the
// registry to wire them in; without, Build says so, and with makers, the
// pool uses what they make.
func TestUnwiredToolsets(t *testing.T) {
	fetchCfg := pool.Config{Agents: []pool.AgentSpec{{Name: "a", Model: echoModel{id: "x"}, Builtin: []string{config.ToolsetFetch}}}}
	if _, err := pool.Build(fetchCfg, pool.Options{}); err == nil || !strings.Contains(err.Error(), "the fetch toolset is not wired into this program") {
		t.Errorf("fetch without a maker: %v", err)
	}
	mcpCfg := pool.Config{
		Agents:     []pool.AgentSpec{{Name: "a", Model: echoModel{id: "x"}}},
		MCPServers: []config.MCPServer{{Name: "srv", Command: "true", Enabled: true}},
	}
	if _, err := pool.Build(mcpCfg, pool.Options{}); err == nil || !strings.Contains(err.Error(), `MCP server "srv": MCP is not wired into this program`) {
		t.Errorf("MCP without a maker: %v", err)
	}

	var asked [][]string
	reg := pool.NewRegistry().SetFetch(func(allowed []string) (tool.Tool, error) {
		asked = append(asked, allowed)
		return getWeather, nil
	})
	fetchCfg.Agents = append(fetchCfg.Agents, pool.AgentSpec{Name: "b", Model: echoModel{id: "x"}, Builtin: []string{config.ToolsetFetch}, FetchAllowedHosts: []string{"localhost"}})
	build(t, fetchCfg, pool.Options{Registry: reg})
	if want := [][]string{{}, {"localhost"}}; len(asked) != 2 || len(asked[0]) != 0 || !slices.Equal(asked[1], want[1]) {
		t.Errorf("FetchMaker calls %q, want one per allow-list %q", asked, want)
	}

	mcps := &fakeMCP{}
	var gotDir string
	reg = pool.NewRegistry().SetMCP(func(servers []config.MCPServer, dir string) (pool.MCPServers, error) {
		gotDir = dir
		if len(servers) != 1 || servers[0].Name != "srv" {
			t.Errorf("servers %+v", servers)
		}
		return mcps, nil
	})
	ws := t.TempDir()
	p, err := pool.Build(mcpCfg, pool.Options{Registry: reg, Workspace: ws})
	if err != nil {
		t.Fatal(err)
	}
	if p.MCP() != pool.MCPServers(mcps) || gotDir == "" {
		t.Errorf("MCP() = %v, dir %q", p.MCP(), gotDir)
	}
	if err := p.Close(); err != nil || !mcps.closed {
		t.Errorf("Close: %v, MCP servers closed: %v", err, mcps.closed)
	}
}

// fakeMCP has no servers and records Close.
type fakeMCP struct{ closed bool }

func (f *fakeMCP) Toolset(string) (tool.Toolset, bool) { return nil, false }
func (f *fakeMCP) Close() error                        { f.closed = true; return nil }
