package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

const specExample = "../docs/spec/examples/agentpool-style.yaml"

func ptr[T any](v T) *T { return &v }

// mustParse parses src and fails the test on error.
func mustParse(t *testing.T, src string) *Manifest {
	t.Helper()
	m, err := Parse("agentpool.yaml", []byte(src))
	if err != nil {
		t.Fatalf("Parse: unexpected error:\n%v", err)
	}
	return m
}

// parseErr parses src, which must be invalid, and returns the error lines.
func parseErr(t *testing.T, src string) []string {
	t.Helper()
	m, err := Parse("agentpool.yaml", []byte(src))
	if err == nil {
		t.Fatalf("Parse: expected an error, got manifest %+v", m)
	}
	if m != nil {
		t.Errorf("Parse returned a manifest along with an error")
	}
	var ce *Error
	if !errors.As(err, &ce) {
		t.Fatalf("error is %T, want *Error: %v", err, err)
	}
	return strings.Split(err.Error(), "\n")
}

func diffLines(t *testing.T, got, want []string) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("error lines differ\ngot:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

func defaultLimits() Limits {
	return Limits{MaxDepth: DefaultMaxDepth, MaxChildren: DefaultMaxChildren, MaxSpawns: DefaultMaxSpawns, MaxTurns: DefaultMaxTurns}
}

func TestLoadSpecExample(t *testing.T) {
	m, err := Load("testdata/agentpool-style.yaml")
	if err != nil {
		t.Fatal(err)
	}
	abs, _ := filepath.Abs("testdata/agentpool-style.yaml")
	if m.Path != abs {
		t.Errorf("Path = %q, want %q", m.Path, abs)
	}
	if m.Dir() != filepath.Dir(abs) {
		t.Errorf("Dir() = %q, want %q", m.Dir(), filepath.Dir(abs))
	}
	want := &Manifest{
		Path:         abs,
		DefaultAgent: "planner",
		AgentOrder:   []string{"planner", "searcher", "summarizer", "critic"},
		Agents: map[string]*Agent{
			"planner": {
				Name:        "planner",
				Description: "Splits the job and hands it out.",
				Model: ModelSpec{
					Type:      "test",
					CallTools: []string{"task"},
					ToolArgs: map[string]map[string]any{
						"task": {"agent_or_team": "research_team", "prompt": "Collect facts about the Go scheduler.", "description": "Research"},
					},
					CustomOutputText: "Plan complete.",
					Line:             8,
				},
				SystemPrompt: "You plan and delegate.",
				Toolsets:     []ToolsetSpec{{Type: "subagent", Line: 16}},
				Line:         6,
			},
			"searcher": {
				Name: "searcher",
				Model: ModelSpec{
					Type:             "test",
					CallTools:        []string{"ask_summarizer"},
					ToolArgs:         map[string]map[string]any{"ask_summarizer": {"prompt": "Summarize what was found."}},
					CustomOutputText: "Search finished.",
					Line:             18,
				},
				Workers: []WorkerSpec{{Name: "summarizer", ResetHistoryOnRun: true, Line: 24}},
				Line:    17,
			},
			"summarizer": {
				Name:  "summarizer",
				Model: ModelSpec{Type: "test", CustomOutputText: "Summary: goroutines are multiplexed onto threads.", CallAllTools: true, Line: 26},
				Line:  25,
			},
			"critic": {
				Name:  "critic",
				Model: ModelSpec{Type: "test", CallAllTools: true, Line: 28},
				Line:  27,
			},
		},
		TeamOrder: []string{"research_team", "review_chain"},
		Teams: map[string]*Team{
			"research_team": {Name: "research_team", Mode: "parallel", Members: []string{"searcher", "critic"}, SharedPrompt: "Be brief.", Line: 30},
			"review_chain":  {Name: "review_chain", Mode: "sequential", Members: []string{"searcher", "critic"}, RequireAll: true, Line: 34},
		},
		Limits: defaultLimits(),
	}
	compareManifest(t, m, want)
	if got := m.EntryPoint(); got != "planner" {
		t.Errorf("EntryPoint() = %q, want planner", got)
	}
}

// The fixture must stay a copy of the shared spec example, which must load.
func TestSpecExampleInSync(t *testing.T) {
	shared, err := os.ReadFile(specExample)
	if err != nil {
		t.Skipf("shared spec not available: %v", err)
	}
	local, err := os.ReadFile("testdata/agentpool-style.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(shared, local) {
		t.Errorf("testdata/agentpool-style.yaml differs from %s; copy it again", specExample)
	}
	if _, err := Load(specExample); err != nil {
		t.Errorf("Load(%s): %v", specExample, err)
	}
}

func compareManifest(t *testing.T, got, want *Manifest) {
	t.Helper()
	// Defaults of the keys a manifest leaves out.
	if want.DefaultModel.Type == "" {
		want.DefaultModel = DefaultModelSpec()
	}
	if want.Skills.MaxSkills == 0 {
		want.Skills = DefaultSkills()
	}
	for _, name := range want.AgentOrder {
		if !reflect.DeepEqual(got.Agents[name], want.Agents[name]) {
			t.Errorf("agent %s:\ngot  %+v\nwant %+v", name, got.Agents[name], want.Agents[name])
		}
	}
	for _, name := range want.TeamOrder {
		if !reflect.DeepEqual(got.Teams[name], want.Teams[name]) {
			t.Errorf("team %s:\ngot  %+v\nwant %+v", name, got.Teams[name], want.Teams[name])
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("manifest:\ngot  %+v\nwant %+v", got, want)
	}
}

func TestLoadFull(t *testing.T) {
	m, err := Load("testdata/full.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := &Manifest{
		Path:         m.Path,
		DefaultAgent: "pipeline",
		AgentOrder:   []string{"lead", "helper", "checker", "tester"},
		Agents: map[string]*Agent{
			"lead": {
				Name:         "lead",
				Description:  "Leads the work.",
				SystemPrompt: "You lead.\n\nBe precise.",
				Model: ModelSpec{
					Type:        "openai",
					Model:       "gpt-4o-mini",
					BaseURL:     "http://localhost:8080/v1",
					APIKeyEnv:   "OPENAI_API_KEY",
					Temperature: ptr(0.2),
					MaxTokens:   1024,
					Timeout:     30 * time.Second,
					InputPrice:  0.15,
					OutputPrice: 0.6,
					Line:        14,
				},
				Toolsets: []ToolsetSpec{{Type: "subagent", Line: 25}},
				Workers: []WorkerSpec{
					{Name: "helper", ResetHistoryOnRun: true, Line: 27},
					{Name: "checker", PassMessageHistory: true, ResetHistoryOnRun: false, Line: 28},
					{Name: "panel", ResetHistoryOnRun: true, Line: 32},
				},
				MaxTurns: 12,
				Line:     9,
			},
			"helper": {
				Name:         "helper",
				Model:        ModelSpec{Type: "anthropic", Model: "claude-3-5-haiku-latest", Line: 35},
				SystemPrompt: "You help.\n",
				Line:         34,
			},
			"checker": {
				Name:        "checker",
				Description: "Shared settings.",
				MaxTurns:    7,
				Model: ModelSpec{
					Type:  "scripted",
					Delay: 10 * time.Millisecond,
					Turns: []ScriptTurn{
						{Text: "Checking."},
						{
							Thinking: "Let me look.",
							ToolCalls: []ScriptToolCall{
								{Name: "lookup", Args: map[string]any{"query": "go", "limit": 3, "nested": map[string]any{"ok": true, "list": []any{1, "two"}}}},
								{Name: "noop", Args: map[string]any{}},
							},
							Delay: time.Millisecond,
						},
						{Text: "Done.", FinishReason: "stop"},
						{Error: "upstream failed"},
					},
					Line: 40,
				},
				Line: 38,
			},
			"tester": {
				Name: "tester",
				Model: ModelSpec{
					Type:             "test",
					CallTools:        []string{"lookup", "noop"},
					ToolArgs:         map[string]map[string]any{"lookup": {"query": "x"}},
					CustomOutputText: "All good.",
					MaxTokens:        10,
					Delay:            5 * time.Millisecond,
					Line:             55,
				},
				Toolsets: []ToolsetSpec{{Type: "subagent", Line: 63}},
				Line:     54,
			},
		},
		TeamOrder: []string{"panel", "pipeline"},
		Teams: map[string]*Team{
			"panel":    {Name: "panel", Description: "Two views at once.", Mode: "parallel", Members: []string{"helper", "checker"}, SharedPrompt: "Be brief.", Line: 66},
			"pipeline": {Name: "pipeline", Mode: "sequential", Members: []string{"panel", "lead"}, RequireAll: false, Line: 71},
		},
		Storage: Storage{Path: "data/sessions.db"},
		Hooks:   Hooks{Settings: []string{"hooks.json"}},
		Limits:  Limits{MaxDepth: 3, MaxChildren: 8, MaxSpawns: DefaultMaxSpawns, SpawnTimeout: 2 * time.Minute, MaxTurns: 40},
	}
	compareManifest(t, m, want)
	if got, want := m.ResolvePath(m.Storage.Path), filepath.Join(filepath.Dir(m.Path), "data/sessions.db"); got != want {
		t.Errorf("ResolvePath = %q, want %q", got, want)
	}
	// tool arguments must be JSON-ready
	b, err := json.Marshal(m.Agents["checker"].Model.Turns[1].ToolCalls[0].Args)
	if err != nil {
		t.Fatalf("json.Marshal(args): %v", err)
	}
	if got := string(b); got != `{"limit":3,"nested":{"list":[1,"two"],"ok":true},"query":"go"}` {
		t.Errorf("args JSON = %s", got)
	}
}

func TestLoadErrorsFile(t *testing.T) {
	_, err := Load("testdata/errors.yaml")
	if err == nil {
		t.Fatal("expected an error")
	}
	var ce *Error
	if !errors.As(err, &ce) {
		t.Fatalf("error is %T, want *Error", err)
	}
	diffLines(t, strings.Split(err.Error(), "\n"), []string{
		`testdata/errors.yaml:1: default_agent: unknown agent or team "nobody"`,
		`testdata/errors.yaml:4: agents.writer.modle: unknown field "modle" (did you mean "model"?)`,
		`testdata/errors.yaml:6: agents.critic.model: unknown model type "tset" (did you mean "test"?)`,
		`testdata/errors.yaml:7: agents.critic.workers[0]: agent "critic" cannot be its own worker`,
		`testdata/errors.yaml:7: agents.critic.workers[1]: unknown agent or team "ghost"`,
		`testdata/errors.yaml:11: teams.review.members[1]: team "review" cannot contain itself`,
		`testdata/errors.yaml:13: limits.max_depth: must not be negative, got -1`,
	})
	// the issues carry the same information as fields
	first := ce.Issues[0]
	if first != (Issue{File: "testdata/errors.yaml", Line: 1, Field: "default_agent", Msg: `unknown agent or team "nobody"`}) {
		t.Errorf("Issues[0] = %+v", first)
	}
	if len(ce.Issues) != 7 {
		t.Errorf("got %d issues, want 7", len(ce.Issues))
	}
}

func TestLoadMissingFile(t *testing.T) {
	_, err := Load("testdata/does-not-exist.yaml")
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("err = %v, want fs.ErrNotExist", err)
	}
	if !strings.Contains(err.Error(), "testdata/does-not-exist.yaml") {
		t.Errorf("error does not name the file: %v", err)
	}
}

// Each error kind gives an exact "file:line: field: message" line.
func TestErrors(t *testing.T) {
	const ok = "agents:\n  a: {model: test}\n" // a valid agent to build on
	tests := []struct {
		name string
		src  string
		want []string
	}{
		// syntax and shape
		{"syntax error", "agents:\n  a:\n    model: test\n  b: x: y\n",
			[]string{`agentpool.yaml:4: invalid YAML: mapping values are not allowed in this context`}},
		{"syntax error on line 1", "agents: [a,",
			[]string{`agentpool.yaml:1: invalid YAML: did not find expected node content`}},
		{"tab indentation", "agents:\n  a:\n\tmodel: test\n",
			[]string{`agentpool.yaml:3: invalid YAML: found character that cannot start any token`}},
		{"unknown anchor", "agents:\n  a: {model: *nope}\n",
			[]string{`agentpool.yaml:2: invalid YAML: unknown anchor 'nope' referenced`}},
		{"empty file", "",
			[]string{`agentpool.yaml:1: manifest is empty: at least one agent is required`}},
		{"only comments", "# nothing here\n",
			[]string{`agentpool.yaml:1: manifest is empty: at least one agent is required`}},
		{"root is a list", "- a\n- b\n",
			[]string{`agentpool.yaml:1: a manifest must be a mapping with keys such as "agents" and "teams", got a list`}},
		{"two documents naming one agent", ok + "---\nagents:\n  a: {model: test}\n",
			[]string{`agentpool.yaml:5: agents.a: duplicate key "a" (first defined at line 2)`}},
		{"two documents with one scalar key", "default_agent: a\n" + ok + "---\ndefault_agent: a\n",
			[]string{`agentpool.yaml:5: default_agent: duplicate key "default_agent" (first defined at line 1)`}},
		{"a document that is a list", ok + "---\n- a\n",
			[]string{`agentpool.yaml:4: a manifest must be a mapping with keys such as "agents" and "teams", got a list (a document of this file)`}},
		{"duplicate key", "agents:\n  a: {model: test}\n  a: {model: test}\n",
			[]string{`agentpool.yaml:3: agents.a: duplicate key "a" (first defined at line 2)`}},

		{"merge key with a scalar", "agents:\n  a:\n    <<: 3\n    model: test\n",
			[]string{`agentpool.yaml:3: agents.a: merge key "<<" expects a mapping or a list of mappings, got 3`}},
		{"non-scalar key", "agents:\n  ? [a]\n  : {model: test}\n  b: {model: test}\n",
			[]string{`agentpool.yaml:2: agents: mapping keys must be strings, got a list`}},
		{"tool arguments that are not JSON values", "agents:\n  a:\n    model:\n      type: test\n      call_tools: [x]\n      tool_args:\n        x: {n: .inf, v: !!int abc}\n",
			[]string{
				`agentpool.yaml:7: agents.a.model.tool_args.x.n: invalid value .inf: not a finite number`,
				`agentpool.yaml:7: agents.a.model.tool_args.x.v: invalid value abc`,
			}},

		// unknown keys
		{"unknown top-level key", ok + "verison: 2\n",
			[]string{`agentpool.yaml:3: verison: unknown field "verison"`}},
		{"unknown agent key with suggestion", "agents:\n  writer:\n    model: test\n    system_promt: hi\n",
			[]string{`agentpool.yaml:4: agents.writer.system_promt: unknown field "system_promt" (did you mean "system_prompt"?)`}},
		{"unknown model key", "agents:\n  a:\n    model:\n      type: test\n      custom_output: hi\n",
			[]string{`agentpool.yaml:5: agents.a.model.custom_output: unknown field "custom_output"`}},
		{"unknown team key", ok + "teams:\n  t: {mode: parallel, members: [a], memebrs: [a]}\n",
			[]string{`agentpool.yaml:4: teams.t.memebrs: unknown field "memebrs" (did you mean "members"?)`}},
		{"unknown worker key", "agents:\n  a:\n    model: test\n    workers:\n      - {name: b, pass_history: true}\n  b: {model: test}\n",
			[]string{`agentpool.yaml:5: agents.a.workers[0].pass_history: unknown field "pass_history"`}},
		{"unknown limits key", ok + "limits:\n  max_dept: 3\n",
			[]string{`agentpool.yaml:4: limits.max_dept: unknown field "max_dept" (did you mean "max_depth"?)`}},
		{"unknown storage and hooks keys", ok + "storage: {file: x}\nhooks: {setting: y}\n",
			[]string{
				`agentpool.yaml:3: storage.file: unknown field "file"`,
				`agentpool.yaml:4: hooks.setting: unknown field "setting" (did you mean "settings"?)`,
			}},
		{"unknown turn key", "agents:\n  a:\n    model:\n      type: scripted\n      turns:\n        - {txt: hi}\n",
			[]string{`agentpool.yaml:6: agents.a.model.turns[0].txt: unknown field "txt" (did you mean "text"?)`}},
		{"unknown toolset key", "agents:\n  a:\n    model: test\n    tools:\n      - {type: subagent, name: x}\n",
			[]string{`agentpool.yaml:5: agents.a.tools[0].name: unknown field "name"`}},

		// agents
		{"no agents key", "teams: {}\n",
			[]string{`agentpool.yaml:1: agents: at least one agent is required`}},
		{"agents is a list", "agents: [a, b]\n",
			[]string{`agentpool.yaml:1: agents: expected a mapping of agent names to agents, got a list`}},
		{"agent is a scalar", "agents:\n  a: 3\n",
			[]string{`agentpool.yaml:2: agents.a: expected a mapping, got 3`}},
		{"invalid agent name", "agents:\n  1st: {model: test}\n  my.agent: {model: test}\n",
			[]string{
				`agentpool.yaml:2: agents.1st: invalid name "1st": names start with a letter and hold only letters, digits, "_" and "-"`,
				`agentpool.yaml:3: agents.my.agent: invalid name "my.agent": names start with a letter and hold only letters, digits, "_" and "-"`,
			}},
		{"negative max_turns", "agents:\n  a:\n    model: test\n    max_turns: -1\n",
			[]string{`agentpool.yaml:4: agents.a.max_turns: must not be negative, got -1`}},
		{"max_turns not an integer", "agents:\n  a:\n    model: test\n    max_turns: many\n",
			[]string{`agentpool.yaml:4: agents.a.max_turns: expected an integer, got "many"`}},
		{"description not a string", "agents:\n  a:\n    model: test\n    description: [x]\n",
			[]string{`agentpool.yaml:4: agents.a.description: expected a string, got a list`}},
		{"system_prompt list with a mapping", "agents:\n  a:\n    model: test\n    system_prompt:\n      - one\n      - {two: 2}\n",
			[]string{
				`agentpool.yaml:6: agents.a.system_prompt[1].two: unknown field "two"`,
				`agentpool.yaml:6: agents.a.system_prompt[1]: missing required field "content" (a static prompt)`,
			}},
		{"system_prompt list with a number list", "agents:\n  a:\n    model: test\n    system_prompt:\n      - one\n      - [2]\n",
			[]string{`agentpool.yaml:6: agents.a.system_prompt[1]: expected a string or a prompt entry ({type: library, reference: NAME}, ...), got a list`}},

		// models
		{"unknown model type (string)", "agents:\n  writer:\n    model: tset\n",
			[]string{`agentpool.yaml:3: agents.writer.model: unknown model type "tset" (did you mean "test"?)`}},
		{"unknown model type far from any", "agents:\n  writer:\n    model: zzmodel-4\n",
			[]string{`agentpool.yaml:3: agents.writer.model: unknown model type "zzmodel-4" (types: test, scripted, openai, anthropic, fallback, input; providers: openrouter, groq, ollama, deepseek, mistral, together, fireworks, cerebras, xai, gemini, github, moonshotai, cohere, perplexity, requesty, zai, vercel-gateway, lmstudio, as PROVIDER:MODEL)`}},
		{"unknown provider prefix", "agents:\n  writer:\n    model: google:gemini\n",
			[]string{`agentpool.yaml:3: agents.writer.model: unknown model type "google" (types: test, scripted, openai, anthropic, fallback, input; providers: openrouter, groq, ollama, deepseek, mistral, together, fireworks, cerebras, xai, gemini, github, moonshotai, cohere, perplexity, requesty, zai, vercel-gateway, lmstudio, as PROVIDER:MODEL)`}},
		{"unknown model type (map)", "agents:\n  writer:\n    model:\n      type: opneai\n",
			[]string{`agentpool.yaml:4: agents.writer.model.type: unknown model type "opneai" (did you mean "openai"?)`}},
		{"provider without model id", "agents:\n  a:\n    model: \"openai:\"\n  b:\n    model: anthropic\n",
			[]string{
				`agentpool.yaml:3: agents.a.model: missing model id: write "openai:MODEL", e.g. "openai:gpt-4o-mini"`,
				`agentpool.yaml:5: agents.b.model: missing model id: write "anthropic:MODEL", e.g. "anthropic:claude-3-5-haiku-latest"`,
			}},
		{"test model with an empty answer", "agents:\n  a:\n    model: \"test:\"\n",
			[]string{`agentpool.yaml:3: agents.a.model: missing answer after "test:": write "test" or "test:TEXT" (the test model answering TEXT)`}},
		{"scripted string form", "agents:\n  a:\n    model: scripted\n",
			[]string{`agentpool.yaml:3: agents.a.model: a scripted model needs turns: use the mapping form {type: scripted, turns: [...]}`}},
		{"empty model", "agents:\n  a:\n    model:\n",
			[]string{`agentpool.yaml:3: agents.a.model: must not be empty (for example "test" or "openai:gpt-4o-mini")`}},
		{"model is a list", "agents:\n  a:\n    model: [test]\n",
			[]string{`agentpool.yaml:3: agents.a.model: expected a model name or a mapping, got a list`}},
		{"model map without type", "agents:\n  a:\n    model: {custom_output_text: hi}\n",
			[]string{`agentpool.yaml:3: agents.a.model: missing required field "type" (one of test, scripted, openai, anthropic, fallback, input, or an identifier such as "openai:gpt-4o-mini")`}},
		{"openai map without model", "agents:\n  a:\n    model:\n      type: openai\n      api_key: sk-x\n",
			[]string{`agentpool.yaml:3: agents.a.model: missing required field "model" (the openai model id, e.g. "gpt-4o-mini")`}},
		{"openai map with empty model", "agents:\n  a:\n    model: {type: openai, model: \"\"}\n",
			[]string{`agentpool.yaml:3: agents.a.model.model: must not be empty`}},
		{"key for another model type", "agents:\n  a:\n    model:\n      type: openai\n      model: gpt-4o\n      turns: [hi]\n      custom_output_text: x\n  b:\n    model: {type: test, model: x, timeout: 1s}\n",
			[]string{
				`agentpool.yaml:6: agents.a.model.turns: field "turns" does not apply to openai models (only to scripted)`,
				`agentpool.yaml:7: agents.a.model.custom_output_text: field "custom_output_text" does not apply to openai models (only to test)`,
				`agentpool.yaml:9: agents.b.model.timeout: field "timeout" does not apply to test models (only to openai and anthropic)`,
			}},
		{"api_key and api_key_env", "agents:\n  a:\n    model:\n      type: anthropic\n      model: claude\n      api_key: k\n      api_key_env: K\n",
			[]string{`agentpool.yaml:7: agents.a.model.api_key_env: set either api_key or api_key_env, not both`}},
		{"bad numbers", "agents:\n  a:\n    model:\n      type: openai\n      model: gpt-4o\n      temperature: 2.5\n      max_tokens: -5\n      input_price: -1\n      output_price: cheap\n",
			[]string{
				`agentpool.yaml:6: agents.a.model.temperature: must be between 0 and 2, got 2.5`,
				`agentpool.yaml:7: agents.a.model.max_tokens: must not be negative, got -5`,
				`agentpool.yaml:8: agents.a.model.input_price: must not be negative, got -1`,
				`agentpool.yaml:9: agents.a.model.output_price: expected a number, got "cheap"`,
			}},
		{"bad context window", "agents:\n  a:\n    model:\n      type: scripted\n      turns: [hi]\n      context_window: 0\n      compact_threshold: 1.5\n  b:\n    model: {type: test, context_window: -1, compact_threshold: 0}\n  c:\n    model: {type: test, context_window: big, compact_threshold: most}\n",
			[]string{
				`agentpool.yaml:6: agents.a.model.context_window: must be greater than 0`,
				`agentpool.yaml:7: agents.a.model.compact_threshold: must be greater than 0 and at most 1 (the share of the context window a request may fill before older turns are summarised; default 0.8), got 1.5`,
				`agentpool.yaml:9: agents.b.model.context_window: must not be negative, got -1`,
				`agentpool.yaml:9: agents.b.model.compact_threshold: must be greater than 0 and at most 1 (the share of the context window a request may fill before older turns are summarised; default 0.8), got 0`,
				`agentpool.yaml:11: agents.c.model.context_window: expected an integer, got "big"`,
				`agentpool.yaml:11: agents.c.model.compact_threshold: expected a number, got "most"`,
			}},
		{"call_tools entries", "agents:\n  a:\n    model:\n      type: test\n      call_tools: [task, \"\", 3, [x]]\n",
			[]string{
				`agentpool.yaml:5: agents.a.model.call_tools[1]: expected a non-empty tool name, got ""`,
				`agentpool.yaml:5: agents.a.model.call_tools[3]: expected a non-empty tool name, got a list`,
			}},
		{"call_tools not a list", "agents:\n  a:\n    model: {type: test, call_tools: task}\n",
			[]string{`agentpool.yaml:3: agents.a.model.call_tools: expected "all" or a list of tool names, got "task"`}},
		{"tool_args for a tool not called", "agents:\n  a:\n    model:\n      type: test\n      call_tools: [task]\n      tool_args:\n        tsak: {prompt: x}\n        task: [1]\n",
			[]string{
				`agentpool.yaml:7: agents.a.model.tool_args.tsak: tool "tsak" is not listed in call_tools (did you mean "task"?)`,
				`agentpool.yaml:8: agents.a.model.tool_args.task: expected a mapping of tool arguments, got a list`,
			}},

		// scripted turns
		{"scripted without turns", "agents:\n  a:\n    model: {type: scripted}\n",
			[]string{`agentpool.yaml:3: agents.a.model: missing required field "turns" (the responses of the scripted model, in order)`}},
		{"scripted with empty turns", "agents:\n  a:\n    model: {type: scripted, turns: []}\n",
			[]string{`agentpool.yaml:3: agents.a.model.turns: at least one turn is required`}},
		{"bad turns", "agents:\n  a:\n    model:\n      type: scripted\n      turns:\n        - ~\n        - tool_calls: [{args: {}}, {name: x, args: 3}]\n        - {error: \"\", finish_reason: \"\", delay: fast}\n",
			[]string{
				`agentpool.yaml:6: agents.a.model.turns[0]: empty turn: set text, thinking, tool_calls or error`,
				`agentpool.yaml:7: agents.a.model.turns[1].tool_calls[0]: missing required field "name"`,
				`agentpool.yaml:7: agents.a.model.turns[1].tool_calls[1].args: expected a mapping of tool arguments, got 3`,
				`agentpool.yaml:8: agents.a.model.turns[2].error: must not be empty`,
				`agentpool.yaml:8: agents.a.model.turns[2].delay: invalid duration "fast" (use a Go duration such as "30s", "500ms" or "2m")`,
				`agentpool.yaml:8: agents.a.model.turns[2].finish_reason: must not be empty`,
			}},

		// durations
		{"bad durations", "agents:\n  a:\n    model: {type: openai, model: m, timeout: 30s3}\n  b:\n    model: {type: test, delay: -1s}\nlimits:\n  spawn_timeout: [1s]\n",
			[]string{
				`agentpool.yaml:3: agents.a.model.timeout: invalid duration "30s3" (use a Go duration such as "30s", "500ms" or "2m")`,
				`agentpool.yaml:5: agents.b.model.delay: duration must not be negative, got "-1s"`,
				`agentpool.yaml:7: limits.spawn_timeout: expected a duration such as "30s", got a list`,
			}},

		// toolsets
		{"the same toolset in tools and toolsets", "agents:\n  a:\n    model: test\n    tools: [subagent]\n    toolsets: [subagent]\n",
			[]string{`agentpool.yaml:5: agents.a.toolsets[0]: duplicate toolset "subagent" (first listed at line 4)`}},
		{"unknown toolset type", "agents:\n  a:\n    model: test\n    toolsets:\n      - type: subagents\n      - mcp\n",
			[]string{
				`agentpool.yaml:5: agents.a.toolsets[0].type: unknown toolset type "subagents" (did you mean "subagent"?)`,
				`agentpool.yaml:6: agents.a.toolsets[1]: no toolset is named "mcp": AgentPool finds a tool of that name among those its Python program registered, which agentpool cannot load; agentpool's toolsets are subagent, file_access, execution, plan, fetch, skills, code, search, workers, and MCP servers (mcp_servers) add tools`,
			}},
		{"toolset without type and duplicate", "agents:\n  a:\n    model: test\n    tools:\n      - {}\n      - subagent\n      - type: subagent\n",
			[]string{
				`agentpool.yaml:5: agents.a.tools[0]: missing required field "type" (known: subagent, file_access, execution, plan, fetch, skills, code, search, workers)`,
				`agentpool.yaml:7: agents.a.tools[2].type: duplicate toolset "subagent" (first listed at line 6)`,
			}},

		// workers
		{"worker references", "agents:\n  a:\n    model: test\n    workers: [a, summariser, t, b]\n  summarizer: {model: test}\n  b: {model: test}\nteams:\n  t: {mode: parallel, members: [b]}\n",
			[]string{
				`agentpool.yaml:4: agents.a.workers[0]: agent "a" cannot be its own worker`,
				`agentpool.yaml:4: agents.a.workers[1]: unknown agent or team "summariser" (did you mean "summarizer"?)`,
			}},
		{"worker map errors", "agents:\n  a:\n    model: test\n    workers:\n      - {type: agent}\n      - {name: b, type: bot}\n      - {name: b, pass_message_history: sure}\n      - {name: t, type: agent}\n      - {name: b, type: team}\n      - b\n  b: {model: test}\nteams:\n  t: {mode: parallel, members: [b]}\n",
			[]string{
				`agentpool.yaml:5: agents.a.workers[0]: missing required field "name"`,
				`agentpool.yaml:6: agents.a.workers[1].type: unknown worker type "bot" (known: agent, team)`,
				`agentpool.yaml:7: agents.a.workers[2].pass_message_history: expected true or false, got "sure"`,
				`agentpool.yaml:7: agents.a.workers[2]: duplicate worker "b" (first listed at line 6)`,
				`agentpool.yaml:8: agents.a.workers[3]: worker "t" is a team, not an agent (set type: team)`,
				`agentpool.yaml:9: agents.a.workers[4]: duplicate worker "b" (first listed at line 6)`,
				`agentpool.yaml:10: agents.a.workers[5]: duplicate worker "b" (first listed at line 6)`,
			}},
		{"worker declared as team names an agent", "agents:\n  a:\n    model: test\n    workers: [{name: b, type: team}]\n  b: {model: test}\n",
			[]string{`agentpool.yaml:4: agents.a.workers[0]: worker "b" is an agent, not a team (set type: agent)`}},
		{"empty and non-string types", "agents:\n  a:\n    model: {type: [test]}\n    tools: [{type: }]\n    workers: [{name: b, type: \"\"}]\n  b: {model: test}\nteams:\n  t: {mode: ~, members: [a]}\n",
			[]string{
				`agentpool.yaml:3: agents.a.model.type: expected a string, got a list`,
				`agentpool.yaml:4: agents.a.tools[0].type: must not be empty`,
				`agentpool.yaml:5: agents.a.workers[0].type: must not be empty`,
				`agentpool.yaml:8: teams.t.mode: must not be empty`,
			}},
		{"empty worker and toolset strings", "agents:\n  a:\n    model: test\n    tools: [\"\", ~]\n    workers: [\"\", ~]\n",
			[]string{
				`agentpool.yaml:4: agents.a.tools[0]: must not be empty`,
				`agentpool.yaml:4: agents.a.tools[1]: missing required field "type" (known: subagent, file_access, execution, plan, fetch, skills, code, search, workers)`,
				`agentpool.yaml:5: agents.a.workers[0]: must not be empty`,
				`agentpool.yaml:5: agents.a.workers[1]: expected an agent name or a mapping with "name", got null`,
			}},
		{"workers not a list", "agents:\n  a:\n    model: test\n    workers: b\n  b: {model: test}\n",
			[]string{`agentpool.yaml:4: agents.a.workers: expected a list, got "b"`}},

		// teams
		{"team mode", ok + "teams:\n  t1: {members: [a]}\n  t2: {mode: paralel, members: [a]}\n",
			[]string{
				`agentpool.yaml:4: teams.t1: missing required field "mode" (parallel or sequential)`,
				`agentpool.yaml:5: teams.t2.mode: unknown team mode "paralel" (did you mean "parallel"?)`,
			}},
		{"team members", ok + "teams:\n  t1: {mode: parallel}\n  t2: {mode: parallel, members: []}\n  t3: {mode: sequential, members: [a, nobody, t3, \"\"]}\n  t4: {mode: sequential, members: a}\n",
			[]string{
				`agentpool.yaml:4: teams.t1: missing required field "members"`,
				`agentpool.yaml:5: teams.t2.members: a team needs at least one member`,
				`agentpool.yaml:6: teams.t3.members[3]: must not be empty`,
				`agentpool.yaml:6: teams.t3.members[1]: unknown agent or team "nobody"`,
				`agentpool.yaml:6: teams.t3.members[2]: team "t3" cannot contain itself`,
				`agentpool.yaml:7: teams.t4.members: expected a list, got "a"`,
			}},
		{"team cycle", ok + "teams:\n  t1:\n    mode: parallel\n    members: [a, t2]\n  t2:\n    mode: sequential\n    members: [t3]\n  t3:\n    mode: parallel\n    members: [a, t1]\n",
			[]string{`agentpool.yaml:12: teams.t3.members[1]: team cycle: t1 -> t2 -> t3 -> t1`}},
		{"two team cycles", ok + "teams:\n  x: {mode: parallel, members: [y]}\n  y: {mode: parallel, members: [x]}\n  z: {mode: parallel, members: [w]}\n  w: {mode: parallel, members: [z]}\n",
			[]string{
				`agentpool.yaml:5: teams.y.members[0]: team cycle: x -> y -> x`,
				`agentpool.yaml:7: teams.w.members[0]: team cycle: z -> w -> z`,
			}},
		{"agent and team share a name", ok + "teams:\n  a: {mode: parallel, members: [a]}\n",
			[]string{`agentpool.yaml:4: teams.a: name "a" is already used by the agent at line 2 (agents and teams share one namespace)`}},
		{"require_all not a bool", ok + "teams:\n  t: {mode: sequential, members: [a], require_all: 1}\n",
			[]string{`agentpool.yaml:4: teams.t.require_all: expected true or false, got 1`}},
		{"invalid team name", ok + "teams:\n  _t: {mode: parallel, members: [a]}\n",
			[]string{`agentpool.yaml:4: teams._t: invalid name "_t": names start with a letter and hold only letters, digits, "_" and "-"`}},

		// default agent
		{"unknown default agent", "default_agent: writr\nagents:\n  writer: {model: test}\n",
			[]string{`agentpool.yaml:1: default_agent: unknown agent or team "writr" (did you mean "writer"?)`}},
		{"default agent not a string", "default_agent: [a]\n" + ok,
			[]string{`agentpool.yaml:1: default_agent: expected a string, got a list`}},

		// limits, storage, hooks
		{"negative limits", ok + "limits:\n  max_depth: -1\n  max_children: -2\n  max_spawns: -3\n  max_turns: -4\n  spawn_timeout: -1s\n",
			[]string{
				`agentpool.yaml:4: limits.max_depth: must not be negative, got -1`,
				`agentpool.yaml:5: limits.max_children: must not be negative, got -2`,
				`agentpool.yaml:6: limits.max_spawns: must not be negative, got -3`,
				`agentpool.yaml:7: limits.max_turns: must not be negative, got -4`,
				`agentpool.yaml:8: limits.spawn_timeout: duration must not be negative, got "-1s"`,
			}},
		{"limits not integers", ok + "limits: {max_depth: 2.5, max_spawns: lots}\n",
			[]string{
				`agentpool.yaml:3: limits.max_depth: expected an integer, got 2.5`,
				`agentpool.yaml:3: limits.max_spawns: expected an integer, got "lots"`,
			}},
		{"limits not a mapping", ok + "limits: 5\n",
			[]string{`agentpool.yaml:3: limits: expected a mapping, got 5`}},
		{"storage url not postgres", ok + "storage: {url: \"mysql://u:pw@h/db\"}\n",
			[]string{`agentpool.yaml:3: storage.url: expected a postgres:// or postgresql:// URL, got "mysql://u:xxxxx@h/db" (a SQLite database is storage.path)`}},
		{"storage path and url", ok + "storage: {path: a.db, url: \"postgres://h/db\"}\n",
			[]string{`agentpool.yaml:3: storage.url: storage.path is set too: use one of them`}},
		{"storage and hooks values", ok + "storage: {path: [x]}\nhooks:\n  settings: [a.json, \"\", {b: c}]\n",
			[]string{
				`agentpool.yaml:3: storage.path: expected a string, got a list`,
				`agentpool.yaml:5: hooks.settings[1]: must not be empty`,
				`agentpool.yaml:5: hooks.settings[2]: expected a string, got a mapping`,
			}},
		{"approvals values", ok + "approvals:\n  timeout: soon\n  unattended: maybe\n  ask: always\n",
			[]string{
				`agentpool.yaml:4: approvals.timeout: invalid duration "soon" (use a Go duration such as "30s", "500ms" or "2m")`,
				`agentpool.yaml:5: approvals.unattended: unknown answer "maybe" (allow or deny)`,
				`agentpool.yaml:6: approvals.ask: unknown field "ask"`,
			}},
		{"approvals not a mapping", ok + "approvals: [deny]\n",
			[]string{`agentpool.yaml:3: approvals: expected a mapping, got a list`}},
		{"hooks settings not a path", ok + "hooks: {settings: {a: b}}\n",
			[]string{`agentpool.yaml:3: hooks.settings: expected a path or a list of paths, got a mapping`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			diffLines(t, parseErr(t, tc.src), tc.want)
		})
	}
}

// All errors are reported, in line order, not only the first.
func TestMultipleErrors(t *testing.T) {
	src := `default_agent: nobody
agents:
  writer:
    model: tset
    toolz: []
  critic:
    model: {type: test, call_tools: [""]}
    workers: [ghost]
teams:
  t:
    mode: both
    members: [writer, t]
limits:
  max_depth: -1
`
	got := parseErr(t, src)
	diffLines(t, got, []string{
		`agentpool.yaml:1: default_agent: unknown agent or team "nobody"`,
		`agentpool.yaml:4: agents.writer.model: unknown model type "tset" (did you mean "test"?)`,
		`agentpool.yaml:5: agents.writer.toolz: unknown field "toolz" (did you mean "tools"?)`,
		`agentpool.yaml:7: agents.critic.model.call_tools[0]: expected a non-empty tool name, got ""`,
		`agentpool.yaml:8: agents.critic.workers[0]: unknown agent or team "ghost"`,
		`agentpool.yaml:11: teams.t.mode: unknown team mode "both" (known: parallel, sequential)`,
		`agentpool.yaml:12: teams.t.members[1]: team "t" cannot contain itself`,
		`agentpool.yaml:14: limits.max_depth: must not be negative, got -1`,
	})
}

func TestErrorFormat(t *testing.T) {
	tests := []struct {
		issue Issue
		want  string
	}{
		{Issue{File: "a.yaml", Line: 3, Field: "agents.x", Msg: "bad"}, "a.yaml:3: agents.x: bad"},
		{Issue{File: "a.yaml", Line: 3, Msg: "bad"}, "a.yaml:3: bad"},
		{Issue{File: "a.yaml", Field: "agents", Msg: "bad"}, "a.yaml: agents: bad"},
		{Issue{Line: 2, Field: "f", Msg: "bad"}, "line 2: f: bad"},
	}
	for _, tc := range tests {
		if got := tc.issue.String(); got != tc.want {
			t.Errorf("%+v.String() = %q, want %q", tc.issue, got, tc.want)
		}
	}
	e := &Error{Issues: []Issue{tests[0].issue, tests[1].issue}}
	if got := e.Error(); got != "a.yaml:3: agents.x: bad\na.yaml:3: bad" {
		t.Errorf("Error() = %q", got)
	}
}

func TestToolsAndToolsets(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want []ToolsetSpec
	}{
		{"tools key", "agents:\n  a:\n    model: test\n    tools:\n      - type: subagent\n", []ToolsetSpec{{Type: "subagent", Line: 5}}},
		{"toolsets key", "agents:\n  a:\n    model: test\n    toolsets:\n      - type: subagent\n", []ToolsetSpec{{Type: "subagent", Line: 5}}},
		{"string entry", "agents:\n  a:\n    model: test\n    toolsets: [subagent]\n", []ToolsetSpec{{Type: "subagent", Line: 4}}},
		{"empty list", "agents:\n  a:\n    model: test\n    tools: []\n", nil},
		{"null", "agents:\n  a:\n    model: test\n    tools:\n", nil},
		{"absent", "agents:\n  a:\n    model: test\n", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := mustParse(t, tc.src).Agents["a"].Toolsets
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Toolsets = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestSystemPrompt(t *testing.T) {
	tests := []struct {
		name, yaml, want string
	}{
		{"plain string", "system_prompt: Be kind.", "Be kind."},
		{"quoted string", `system_prompt: "Line one.\nLine two."`, "Line one.\nLine two."},
		{"block scalar", "system_prompt: |\n      first\n      second", "first\nsecond\n"},
		{"folded scalar", "system_prompt: >-\n      first\n      second", "first second"},
		{"list", "system_prompt: [You write., Be brief.]", "You write.\n\nBe brief."},
		{"block list", "system_prompt:\n      - One.\n      - Two.\n      - Three.", "One.\n\nTwo.\n\nThree."},
		{"empty list", "system_prompt: []", ""},
		{"null", "system_prompt:", ""},
		{"absent", "description: x", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := mustParse(t, "agents:\n  a:\n    model: test\n    "+tc.yaml+"\n")
			if got := m.Agents["a"].SystemPrompt; got != tc.want {
				t.Errorf("SystemPrompt = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestWorkerForms(t *testing.T) {
	const others = "  b: {model: test}\n  c: {model: test}\nteams:\n  t: {mode: parallel, members: [b, c]}\n"
	tests := []struct {
		name    string
		workers string
		want    []WorkerSpec
	}{
		{"strings", "[b, c]", []WorkerSpec{
			{Name: "b", ResetHistoryOnRun: true, Line: 4},
			{Name: "c", ResetHistoryOnRun: true, Line: 4},
		}},
		{"map with defaults", "[{name: b}]", []WorkerSpec{{Name: "b", ResetHistoryOnRun: true, Line: 4}}},
		{"map with options", "\n      - name: b\n        type: agent\n        pass_message_history: true\n        reset_history_on_run: false", []WorkerSpec{
			{Name: "b", PassMessageHistory: true, ResetHistoryOnRun: false, Line: 5},
		}},
		{"mixed, with a team", "\n      - b\n      - {name: t, type: team, pass_message_history: false}\n      - {name: c, reset_history_on_run: true}", []WorkerSpec{
			{Name: "b", ResetHistoryOnRun: true, Line: 5},
			{Name: "t", ResetHistoryOnRun: true, Line: 6},
			{Name: "c", ResetHistoryOnRun: true, Line: 7},
		}},
		{"team by string", "[t]", []WorkerSpec{{Name: "t", ResetHistoryOnRun: true, Line: 4}}},
		{"empty", "[]", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := mustParse(t, "agents:\n  a:\n    model: test\n    workers: "+tc.workers+"\n"+others)
			if got := m.Agents["a"].Workers; !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Workers = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestModelForms(t *testing.T) {
	tests := []struct {
		name  string
		model string
		want  ModelSpec
	}{
		{"test string", "test", ModelSpec{Type: "test", CallAllTools: true, Line: 3}},
		{"openai string", "openai:gpt-4o-mini", ModelSpec{Type: "openai", Model: "gpt-4o-mini", Line: 3}},
		{"anthropic string", "anthropic:claude-3-5-sonnet-latest", ModelSpec{Type: "anthropic", Model: "claude-3-5-sonnet-latest", Line: 3}},
		{"model id with colons", `"openai:ft:gpt-4o:org:x"`, ModelSpec{Type: "openai", Model: "ft:gpt-4o:org:x", Line: 3}},
		{"test map", "{type: test}", ModelSpec{Type: "test", CallAllTools: true, Line: 3}},
		{"test map with keys", "\n      type: test\n      custom_output_text: Done.\n      call_tools: [task]\n      tool_args:\n        task: {agent_or_team: b, prompt: go}\n      input_price: 1\n      output_price: 2.5\n      max_tokens: 100",
			ModelSpec{
				Type: "test", CustomOutputText: "Done.", CallTools: []string{"task"},
				ToolArgs:   map[string]map[string]any{"task": {"agent_or_team": "b", "prompt": "go"}},
				InputPrice: 1, OutputPrice: 2.5, MaxTokens: 100, Line: 3,
			}},
		{"tool_args with null args", "{type: test, call_tools: [x], tool_args: {x: }}",
			ModelSpec{Type: "test", CallTools: []string{"x"}, ToolArgs: map[string]map[string]any{"x": {}}, Line: 3}},
		{"openai map", "\n      type: openai\n      model: gpt-4o\n      base_url: https://example.test/v1\n      api_key: sk-test\n      temperature: 0\n      timeout: 1m30s",
			ModelSpec{Type: "openai", Model: "gpt-4o", BaseURL: "https://example.test/v1", APIKey: "sk-test", Temperature: ptr(0.0), Timeout: 90 * time.Second, Line: 3}},
		{"anthropic map", "{type: anthropic, model: claude-3-5-haiku-latest, api_key_env: ANTHROPIC_API_KEY, temperature: 1}",
			ModelSpec{Type: "anthropic", Model: "claude-3-5-haiku-latest", APIKeyEnv: "ANTHROPIC_API_KEY", Temperature: ptr(1.0), Line: 3}},
		{"scripted map", "{type: scripted, turns: [Hi.], delay: 0}",
			ModelSpec{Type: "scripted", Turns: []ScriptTurn{{Text: "Hi."}}, Line: 3}},
		{"response cap", "{type: scripted, turns: [Hi.], max_response_bytes: 1048576}",
			ModelSpec{Type: "scripted", Turns: []ScriptTurn{{Text: "Hi."}}, MaxResponseBytes: 1 << 20, Line: 3}},
		{"context window", "{type: test, context_window: 8000, compact_threshold: 0.5}",
			ModelSpec{Type: "test", CallAllTools: true, ContextWindow: 8000, CompactThreshold: 0.5, Line: 3}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := mustParse(t, "agents:\n  a:\n    model: "+tc.model+"\n  b: {model: test}\n")
			if got := m.Agents["a"].Model; !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Model =\n  %+v\nwant\n  %+v", got, tc.want)
			}
		})
	}
}

func TestDurations(t *testing.T) {
	tests := []struct {
		value string
		want  time.Duration
	}{
		{"30s", 30 * time.Second},
		{"500ms", 500 * time.Millisecond},
		{"1h2m3s", time.Hour + 2*time.Minute + 3*time.Second},
		{`"2m"`, 2 * time.Minute},
		{"0", 0},
		{"0s", 0},
		{"", 0},
	}
	for _, tc := range tests {
		t.Run(tc.value, func(t *testing.T) {
			m := mustParse(t, "agents:\n  a:\n    model: {type: openai, model: m, timeout: "+tc.value+"}\n  s:\n    model: {type: scripted, delay: "+tc.value+", turns: [{text: x, delay: "+tc.value+"}]}\nlimits:\n  spawn_timeout: "+tc.value+"\n")
			if got := m.Agents["a"].Model.Timeout; got != tc.want {
				t.Errorf("timeout = %v, want %v", got, tc.want)
			}
			if got := m.Agents["s"].Model.Delay; got != tc.want {
				t.Errorf("delay = %v, want %v", got, tc.want)
			}
			if got := m.Agents["s"].Model.Turns[0].Delay; got != tc.want {
				t.Errorf("turn delay = %v, want %v", got, tc.want)
			}
			if got := m.Limits.SpawnTimeout; got != tc.want {
				t.Errorf("spawn_timeout = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestScriptedTurns(t *testing.T) {
	src := `agents:
  s:
    model:
      type: scripted
      delay: 20ms
      turns:
        - Hello there.
        - thinking: I should look this up.
          tool_calls:
            - name: task
              args:
                agent_or_team: helper
                prompt: Find it.
                async_mode: true
            - name: list_available_nodes
        - text: Cut short
          finish_reason: length
          delay: 0s
        - text: partial
          error: connection reset
    toolsets: [subagent]
  helper:
    model: test
`
	m := mustParse(t, src)
	want := []ScriptTurn{
		{Text: "Hello there."},
		{Thinking: "I should look this up.", ToolCalls: []ScriptToolCall{
			{Name: "task", Args: map[string]any{"agent_or_team": "helper", "prompt": "Find it.", "async_mode": true}},
			{Name: "list_available_nodes", Args: map[string]any{}},
		}},
		{Text: "Cut short", FinishReason: "length"},
		{Text: "partial", Error: "connection reset"},
	}
	ms := m.Agents["s"].Model
	if ms.Type != "scripted" || ms.Delay != 20*time.Millisecond || ms.Line != 3 {
		t.Errorf("model = %+v", ms)
	}
	if !reflect.DeepEqual(ms.Turns, want) {
		t.Errorf("Turns =\n  %+v\nwant\n  %+v", ms.Turns, want)
	}
}

func TestTeams(t *testing.T) {
	m := mustParse(t, `agents:
  a: {model: test}
  b: {model: test}
teams:
  inner:
    mode: parallel
    members: [a, b]
    shared_prompt: [Be brief., Cite sources.]
  outer:
    description: Runs inner, then a again.
    mode: sequential
    members: [inner, a, a]
    require_all: false
`)
	want := map[string]*Team{
		"inner": {Name: "inner", Mode: "parallel", Members: []string{"a", "b"}, SharedPrompt: "Be brief.\n\nCite sources.", Line: 5},
		"outer": {Name: "outer", Mode: "sequential", Members: []string{"inner", "a", "a"}, Description: "Runs inner, then a again.", RequireAll: false, Line: 9},
	}
	if !reflect.DeepEqual(m.Teams, want) {
		t.Errorf("Teams = %+v, want %+v", m.Teams, want)
	}
	if !reflect.DeepEqual(m.TeamOrder, []string{"inner", "outer"}) {
		t.Errorf("TeamOrder = %v", m.TeamOrder)
	}
	// a team may be the default entry point
	m = mustParse(t, "default_agent: t\nagents:\n  a: {model: test}\nteams:\n  t: {mode: parallel, members: [a]}\n")
	if m.DefaultAgent != "t" || m.EntryPoint() != "t" {
		t.Errorf("DefaultAgent = %q, EntryPoint = %q", m.DefaultAgent, m.EntryPoint())
	}
}

func TestLimits(t *testing.T) {
	tests := []struct {
		name, src string
		want      Limits
	}{
		{"absent", "", defaultLimits()},
		{"null", "limits:\n", defaultLimits()},
		{"zeros take defaults", "limits: {max_depth: 0, max_children: 0, max_spawns: 0, max_turns: 0, spawn_timeout: 0}\n", defaultLimits()},
		{"set", "limits: {max_depth: 2, max_children: 3, max_spawns: 4, max_turns: 5, spawn_timeout: 6s}\n",
			Limits{MaxDepth: 2, MaxChildren: 3, MaxSpawns: 4, MaxTurns: 5, SpawnTimeout: 6 * time.Second}},
		{"partial", "limits: {max_children: 1}\n",
			Limits{MaxDepth: DefaultMaxDepth, MaxChildren: 1, MaxSpawns: DefaultMaxSpawns, MaxTurns: DefaultMaxTurns}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := mustParse(t, "agents:\n  a: {model: test}\n"+tc.src)
			if m.Limits != tc.want {
				t.Errorf("Limits = %+v, want %+v", m.Limits, tc.want)
			}
			if m.Agents["a"].MaxTurns != 0 {
				t.Errorf("agent MaxTurns = %d, want 0 (runtime default)", m.Agents["a"].MaxTurns)
			}
		})
	}
}

func TestStorageAndHooks(t *testing.T) {
	tests := []struct {
		name, src string
		storage   Storage
		hooks     Hooks
	}{
		{"absent", "", Storage{}, Hooks{}},
		{"single settings path", "storage: {path: /var/lib/agentpool}\nhooks: {settings: .claude/settings.json}\n",
			Storage{Path: "/var/lib/agentpool"}, Hooks{Settings: []string{".claude/settings.json"}}},
		{"list of settings paths", "hooks:\n  settings:\n    - a.json\n    - ../b.json\n",
			Storage{}, Hooks{Settings: []string{"a.json", "../b.json"}}},
		{"nulls", "storage:\nhooks:\n  settings:\n", Storage{}, Hooks{}},
		{"postgres url", "storage: {url: \"postgres://u:p@db:5432/ap?sslmode=disable\"}\n",
			Storage{URL: "postgres://u:p@db:5432/ap?sslmode=disable"}, Hooks{}},
		{"postgresql provider", "storage:\n  providers: [{type: sql, url: \"postgresql+asyncpg://u@db/ap\"}, {type: memory}]\n",
			Storage{URL: "postgresql://u@db/ap"}, Hooks{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := mustParse(t, "agents:\n  a: {model: test}\n"+tc.src)
			if !reflect.DeepEqual(m.Storage, tc.storage) || !reflect.DeepEqual(m.Hooks, tc.hooks) {
				t.Errorf("Storage = %+v, Hooks = %+v; want %+v, %+v", m.Storage, m.Hooks, tc.storage, tc.hooks)
			}
		})
	}
}

func TestAnchorsAndMerge(t *testing.T) {
	m := mustParse(t, `x-model: &fast
  type: test
  custom_output_text: shared
x-agent: &base
  description: Base agent.
  max_turns: 3
  model: *fast
agents:
  a:
    <<: *base
  b:
    <<: *base
    description: Own description.
    model: openai:gpt-4o
teams:
  t: {mode: parallel, members: &both [a, b]}
  u: {mode: sequential, members: *both}
`)
	a, b := m.Agents["a"], m.Agents["b"]
	if a.Description != "Base agent." || a.MaxTurns != 3 || a.Model.Type != "test" || a.Model.CustomOutputText != "shared" {
		t.Errorf("a = %+v", a)
	}
	if b.Description != "Own description." || b.MaxTurns != 3 || b.Model.Type != "openai" || b.Model.Model != "gpt-4o" {
		t.Errorf("b = %+v", b)
	}
	if !reflect.DeepEqual(m.Teams["u"].Members, []string{"a", "b"}) {
		t.Errorf("u.Members = %v", m.Teams["u"].Members)
	}
	if !reflect.DeepEqual(m.AgentOrder, []string{"a", "b"}) {
		t.Errorf("AgentOrder = %v", m.AgentOrder)
	}
}

func TestManifestHelpers(t *testing.T) {
	m := mustParse(t, "agents:\n  first: {model: test}\n  second: {model: test}\n")
	if m.Path != "" || m.Dir() != "." {
		t.Errorf("Path = %q, Dir() = %q; want \"\" and \".\"", m.Path, m.Dir())
	}
	if m.DefaultAgent != "" {
		t.Errorf("DefaultAgent = %q, want empty", m.DefaultAgent)
	}
	if got := m.EntryPoint(); got != "first" {
		t.Errorf("EntryPoint() = %q, want first", got)
	}
	if got := m.ResolvePath("x/y.db"); got != "x/y.db" {
		t.Errorf("ResolvePath = %q", got)
	}
	m.Path = "/etc/agentpool/agentpool.yaml"
	for in, want := range map[string]string{"": "", "/abs/file": "/abs/file", "data.db": "/etc/agentpool/data.db", "../x": "/etc/x"} {
		if got := m.ResolvePath(in); got != want {
			t.Errorf("ResolvePath(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestDefault(t *testing.T) {
	m := Default()
	if m.DefaultAgent != "orchestrator" {
		t.Fatalf("DefaultAgent = %q", m.DefaultAgent)
	}
	orch := m.Agents["orchestrator"]
	if orch == nil || len(orch.Toolsets) != 1 || orch.Toolsets[0].Type != ToolsetSubagent {
		t.Fatalf("orchestrator = %+v, want a subagent toolset", orch)
	}
	if orch.Model.Type != ModelTest || !reflect.DeepEqual(orch.Model.CallTools, []string{"task"}) {
		t.Errorf("orchestrator model = %+v, want test model calling task", orch.Model)
	}
	task := orch.Model.ToolArgs["task"]
	if task["agent_or_team"] != "research" || task["prompt"] == "" || task["description"] == "" {
		t.Errorf("task args = %v", task)
	}
	if orch.Model.CustomOutputText == "" || orch.SystemPrompt == "" {
		t.Errorf("orchestrator needs a system prompt and a final answer")
	}

	research := m.Teams["research"]
	if research == nil || research.Mode != ModeParallel || !reflect.DeepEqual(research.Members, []string{"researcher", "critic"}) {
		t.Fatalf("research = %+v", research)
	}
	researcher := m.Agents["researcher"]
	if len(researcher.Workers) != 1 || researcher.Workers[0].Name != "fact_checker" {
		t.Errorf("researcher workers = %+v", researcher.Workers)
	}
	if !reflect.DeepEqual(researcher.Model.CallTools, []string{"ask_fact_checker"}) || researcher.Model.ToolArgs["ask_fact_checker"]["prompt"] == "" {
		t.Errorf("researcher model = %+v", researcher.Model)
	}

	// Every agent runs offline and deterministically, and only calls tools it has.
	for _, name := range m.AgentOrder {
		a := m.Agents[name]
		if a.Model.Type != ModelTest && a.Model.Type != ModelScripted {
			t.Errorf("agent %s uses model type %q, want an offline model", name, a.Model.Type)
		}
		if a.Model.CustomOutputText == "" && a.Model.Type == ModelTest {
			t.Errorf("agent %s has no custom_output_text", name)
		}
		if a.Description == "" {
			t.Errorf("agent %s has no description", name)
		}
		have := map[string]bool{}
		for _, ts := range a.Toolsets {
			if ts.Type == ToolsetSubagent {
				have["task"], have["list_available_nodes"] = true, true
			}
		}
		for _, w := range a.Workers {
			have["ask_"+w.Name] = true
		}
		for _, tool := range a.Model.CallTools {
			if !have[tool] {
				t.Errorf("agent %s calls %q, which it does not have", name, tool)
			}
		}
	}

	// Each call returns a fresh copy.
	m.Agents["orchestrator"].Description = "changed"
	m.AgentOrder[0] = "changed"
	if d := Default(); d.Agents["orchestrator"].Description == "changed" || d.AgentOrder[0] == "changed" {
		t.Error("Default() returned shared state")
	}

	// The embedded text is the file.
	file, err := os.ReadFile("default.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(DefaultYAML(), file) {
		t.Error("DefaultYAML() differs from default.yaml")
	}
	if _, err := Load("default.yaml"); err != nil {
		t.Errorf("Load(default.yaml): %v", err)
	}
}

func TestSuggest(t *testing.T) {
	known := []string{"model", "system_prompt", "workers", "max_turns"}
	tests := map[string]string{
		"modle":        ` (did you mean "model"?)`,
		"Model":        ` (did you mean "model"?)`,
		"worker":       ` (did you mean "workers"?)`,
		"systemprompt": ` (did you mean "system_prompt"?)`,
		"maxturns":     ` (did you mean "max_turns"?)`,
		"colour":       ``,
		"x":            ``,
	}
	for in, want := range tests {
		if got := suggest(in, known); got != want {
			t.Errorf("suggest(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestApprovals(t *testing.T) {
	m := mustParse(t, "agents:\n  a: {model: test}\napprovals: {timeout: 10m, unattended: allow}\n")
	if m.Approvals.Timeout != 10*time.Minute || m.Approvals.Unattended != UnattendedAllow || m.Approvals.Line != 3 {
		t.Fatalf("approvals %+v", m.Approvals)
	}
	if m := mustParse(t, "agents:\n  a: {model: test}\n"); m.Approvals.Timeout != 0 || m.Approvals.Unattended != "" {
		t.Fatalf("default approvals %+v", m.Approvals)
	}
}
