package config

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// AgentPool features agentpool cannot honour give one line each, with the
// file, the line and the field; Python-only ones say so.
func TestAgentPoolErrors(t *testing.T) {
	const py = "not supported in a Go runtime: "
	const pyEnd = ", and agentpool cannot load or run Python code"
	tests := []struct {
		name, src string
		want      []string
	}{
		{"python toolsets", "agents:\n  a:\n    model: test\n    toolsets:\n      - {type: langchain}\n      - import_tools\n",
			[]string{
				`agentpool.yaml:5: agents.a.toolsets[0].type: ` + py + `toolset "langchain" loads LangChain's Python tools` + pyEnd,
				`agentpool.yaml:6: agents.a.toolsets[1]: ` + py + `toolset "import_tools" imports Python functions` + pyEnd,
			}},
		{"toolsets without equivalent", "agents:\n  a:\n    model: test\n    toolsets: [{type: notifications}, {type: openapi}]\n",
			[]string{
				`agentpool.yaml:4: agents.a.toolsets[0].type: toolset "notifications" is not supported: notifications have no agentpool equivalent`,
				`agentpool.yaml:4: agents.a.toolsets[1].type: toolset "openapi" is not supported: OpenAPI tools are not built in; expose the API through an MCP server`,
			}},
		{"provider-side builtin tool", "agents:\n  a:\n    model: test\n    tools: [{type: builtin, builtin_type: web_search}]\n",
			[]string{`agentpool.yaml:4: agents.a.tools[0].builtin_type: builtin tool "web_search" is not supported: agentpool offers web_fetch (the fetch toolset); provider-side tools such as web_search and code_execution are not`}},
		{"external agent kinds", "agents:\n  a: {type: agui, endpoint: \"ftp://x\", startup_delay: 3}\n  b:\n    type: acp\n    provider: claud\n  c:\n    type: acp\n    provider: opencode\n    command: oc\n  d: {type: acp, provider: custom}\n  e: {type: acp, provider: registry, registry_id: nope}\n  f: {type: acp, provider: codex, requires_tool_confirmation: sometimes}\n",
			[]string{
				`agentpool.yaml:2: agents.a.endpoint: "ftp://x" is not an http:// or https:// URL`,
				`agentpool.yaml:2: agents.a.startup_delay: startup_delay needs startup_command (the command that starts the server)`,
				`agentpool.yaml:5: agents.b.provider: unknown ACP provider "claud" (did you mean "claude"?)`,
				`agentpool.yaml:9: agents.c.command: command is for provider custom; provider opencode starts opencode acp`,
				`agentpool.yaml:10: agents.d: missing required field "command" (provider custom)`,
				`agentpool.yaml:11: agents.e.registry_id: unknown registry id "nope" (known: claude-agent-acp, claude-code-acp, codex-acp, gemini, gemini-cli, goose, opencode); or use provider: custom with command and args`,
				`agentpool.yaml:12: agents.f.requires_tool_confirmation: unknown value "sometimes" (always or never)`,
			}},
		{"python agent keys", "agents:\n  a:\n    model: test\n    input_provider: mymod.Provider\n    tool_mode: codemode\n",
			[]string{
				`agentpool.yaml:4: agents.a.input_provider: ` + py + `"mymod.Provider" is a Python import path` + pyEnd,
				`agentpool.yaml:5: agents.a.tool_mode: ` + py + `tool_mode "codemode" runs tools from generated Python code` + pyEnd,
			}},
		{"python prompt, model and response", "responses:\n  R: {response_schema: {type: import, import_path: app.R}}\nagents:\n  a:\n    model: {type: function, function: app.fn}\n    system_prompt: [{type: function, function: app.prompt}]\n",
			[]string{
				`agentpool.yaml:2: responses.R.response_schema: ` + py + `response type "app.R" is a Python import path` + pyEnd,
				`agentpool.yaml:5: agents.a.model.type: ` + py + `model type "function" is a Python function` + pyEnd,
				`agentpool.yaml:6: agents.a.system_prompt[0]: ` + py + `prompt function "app.prompt" is a Python import path` + pyEnd,
			}},
		{"python connections and handlers", "agents:\n  a:\n    model: test\n    connections:\n      - {type: callable, callable: app.forward}\n      - {type: node, name: b, transform: app.clean}\n      - {type: node, name: b, filter_condition: {type: callable, predicate: app.ok}}\n    event_handlers: [{type: callback, import_path: app.on_event}]\n  b: {model: test}\n",
			[]string{
				`agentpool.yaml:5: agents.a.connections[0]: ` + py + `callable connection "app.forward" is a Python import path` + pyEnd,
				`agentpool.yaml:6: agents.a.connections[1].transform: ` + py + `transform "app.clean" is a Python import path` + pyEnd,
				`agentpool.yaml:7: agents.a.connections[2].filter_condition: ` + py + `condition predicate "app.ok" is a Python import path` + pyEnd,
				`agentpool.yaml:8: agents.a.event_handlers[0]: ` + py + `event handler "app.on_event" is a Python import path` + pyEnd,
			}},
		{"unsupported agent keys", "agents:\n  a:\n    model: test\n    triggers: [{type: time, schedule: \"0 9 * * *\"}]\n    knowledge: {paths: [docs]}\n    event_handlers: [{type: tts-openai, voice: alloy}]\n    usage_limits: {output_tokens_limit: 100}\n",
			[]string{
				`agentpool.yaml:4: agents.a.triggers: event triggers (schedules, file watchers) are not supported: agentpool runs a node when asked (agentpool run, a protocol server, a delegation)`,
				`agentpool.yaml:5: agents.a.knowledge: knowledge sources are not supported: put the text in system_prompt, or give the agent the file_access toolset`,
				`agentpool.yaml:7: agents.a.usage_limits.output_tokens_limit: output_tokens_limit is not supported: agentpool bounds a run by request_limit (max_turns) and the manifest's limits`,
			}},
		{"unsupported models", "agents:\n  a: {model: \"anthropic-max:claude-sonnet-4-0\"}\n  b: {model: {type: remote-input}}\n  c: {model: {type: string}}\n",
			[]string{
				`agentpool.yaml:2: agents.a.model: model provider "anthropic-max" is not supported: it signs in with a Claude subscription (OAuth); use anthropic: with an API key`,
				`agentpool.yaml:3: agents.b.model.type: model type "remote-input" is not supported: a person answering over llmling-models' websocket server is not supported; type: input asks the person on agentpool run's terminal`,
				`agentpool.yaml:4: agents.c.model: missing required field "identifier" (for example "openai:gpt-4o-mini")`,
			}},
		{"references", "agents:\n  a:\n    model: test\n    inherits: bse\n    system_prompt: [{type: library, reference: missing}]\n    output_type: Missing\n    connections: [{type: node, name: nobody}]\n  base: {model: test}\n",
			[]string{
				`agentpool.yaml:4: agents.a.inherits: unknown agent "bse" to inherit from (did you mean "base"?)`,
				`agentpool.yaml:5: agents.a.system_prompt[0].reference: unknown library prompt "missing" (define it under prompts.system_prompts)`,
				`agentpool.yaml:6: agents.a.output_type: unknown response type "Missing" (define it under responses:)`,
				`agentpool.yaml:7: agents.a.connections[0].name: unknown agent or team "nobody"`,
			}},
		{"inheritance cycle", "agents:\n  a: {inherits: b}\n  b: {inherits: a}\n",
			[]string{
				`agentpool.yaml:2: agents.a.inherits: inheritance cycle: b -> a -> b`,
				`agentpool.yaml:3: agents.b.inherits: inheritance cycle: a -> b -> a`,
			}},
		{"connections and storage", "agents:\n  a:\n    model: test\n    connections: [{type: node, name: a, connection_type: context}, {type: file, path: x.log}]\nstorage:\n  providers: [{type: sql, url: \"mysql://u:pw@db/x\"}]\n",
			[]string{
				`agentpool.yaml:4: agents.a.connections[0].connection_type: connection_type "context" is not supported: agentpool forwards by running the target (run)`,
				`agentpool.yaml:4: agents.a.connections[1]: file connections are not supported: agentpool stores every session (see agentpool sessions show ID)`,
				`agentpool.yaml:6: storage.providers[0].url: only SQLite (sqlite:///FILE) and PostgreSQL (postgresql://...) databases are supported, got "mysql://u:xxxxx@db/x"`,
			}},
		{"top-level AgentPool keys", "file_agents: {x: x.md}\nteam_mode: {enabled: true, lead_eligible: [b]}\nagents:\n  a: {model: test}\n",
			[]string{
				`agentpool.yaml:1: file_agents.x: agent file "x.md" does not exist (x.md)`,
				`agentpool.yaml:2: team_mode.lead_eligible: unknown agent "b" (did you mean "a"?)`,
			}},
		{"team mode spellings", "agents:\n  a: {model: test}\nteams:\n  t: {mode: parallel, team_mode: sequential, members: [a]}\n  u: {team_mode: both, members: [a]}\n",
			[]string{
				`agentpool.yaml:4: teams.t.team_mode: use either "mode" or "team_mode", not both`,
				`agentpool.yaml:5: teams.u.team_mode: unknown team mode "both" (known: parallel, sequential)`,
			}},
		{"bad response fields", "responses:\n  R:\n    response_schema:\n      fields:\n        a: {type: \"list[\"}\n        b: {type: complex}\nagents:\n  a: {model: test}\n",
			[]string{
				`agentpool.yaml:5: responses.R.response_schema.fields.a.type: unknown field type "list[": expected a type name (use str, int, float, bool, list[T], dict[str, T], Literal[...], T | None)`,
				`agentpool.yaml:6: responses.R.response_schema.fields.b.type: unknown field type "complex": unknown type "complex" (use str, int, float, bool, list[T], dict[str, T], Literal[...], T | None)`,
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			diffLines(t, parseErr(t, tc.src), tc.want)
		})
	}
}

// INHERIT merges files; an issue in an inherited file names that file and
// its line, and a missing or cyclic INHERIT is reported where it is
// written.
func TestInheritFiles(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("base.yaml", "agents:\n  shared:\n    model: test\n    toolsets: [plan]\n  broken:\n    model: tset\nlimits: {max_depth: 3, max_turns: 9}\n")
	child := write("child.yaml", "INHERIT: base.yaml\nagents:\n  shared:\n    description: overridden\n    toolsets: [plan, fetch]\nlimits: {max_depth: 4}\n")
	_, err := Load(child)
	want := filepath.Join(dir, "base.yaml") + `:6: agents.broken.model: unknown model type "tset" (did you mean "test"?)`
	if err == nil || err.Error() != want {
		t.Fatalf("error = %v\nwant %s", err, want)
	}
	write("base.yaml", "agents:\n  shared:\n    model: test\n    toolsets: [plan]\nlimits: {max_depth: 3, max_turns: 9}\n")
	m, err := Load(child)
	if err != nil {
		t.Fatal(err)
	}
	sh := m.Agents["shared"]
	if sh.Description != "overridden" || sh.Model.Type != ModelTest || len(sh.Toolsets) != 2 || sh.Line != 3 {
		t.Errorf("merged agent = %+v", sh)
	}
	if m.Limits.MaxDepth != 4 || m.Limits.MaxTurns != 9 {
		t.Errorf("merged limits = %+v", m.Limits)
	}

	write("a.yaml", "INHERIT: [b.yaml]\nagents: {x: {model: test}}\n")
	write("b.yaml", "INHERIT: a.yaml\n")
	for file, want := range map[string]string{
		write("missing.yaml", "INHERIT: nope.yaml\nagents: {x: {model: test}}\n"):                       "missing.yaml:1: INHERIT: cannot read nope.yaml: no such file or directory",
		write("remote.yaml", "INHERIT: https://example.invalid/base.yml\nagents: {x: {model: test}}\n"): `remote.yaml:1: INHERIT: remote INHERIT "https://example.invalid/base.yml" is not supported: agentpool reads manifests from local files only`,
		filepath.Join(dir, "a.yaml"): "b.yaml:1: INHERIT: INHERIT cycle: a.yaml includes itself",
	} {
		_, err := Load(file)
		if err == nil || !strings.HasSuffix(err.Error(), want) {
			t.Errorf("%s: error = %v, want one ending in %q", filepath.Base(file), err, want)
		}
	}
}

// Model strings: AgentPool's provider ids and bare ids.
func TestModelIDs(t *testing.T) {
	for in, want := range map[string][3]string{
		"gpt-4o-mini":              {ModelOpenAI, "", "gpt-4o-mini"},
		"o3-mini":                  {ModelOpenAI, "", "o3-mini"},
		"claude-sonnet-4-0":        {ModelAnthropic, "", "claude-sonnet-4-0"},
		"gemini-2.5-flash":         {ModelOpenAI, "gemini", "gemini-2.5-flash"},
		"google-gla:gemini-2.0":    {ModelOpenAI, "gemini", "gemini-2.0"},
		"grok:grok-3":              {ModelOpenAI, "xai", "grok-3"},
		"openrouter:openai/gpt-4o": {ModelOpenAI, "openrouter", "openai/gpt-4o"},
		"lmstudio:qwen3":           {ModelOpenAI, "lmstudio", "qwen3"},
	} {
		m := mustParse(t, "agents:\n  a: {model: \""+in+"\"}\n")
		ms := m.Agents["a"].Model
		if got := [3]string{ms.Type, ms.Provider, ms.Model}; got != want {
			t.Errorf("%s -> %q, want %q", in, got, want)
		}
	}
	for _, pr := range Providers() {
		if pr.BaseURL == "" || pr.KeyEnv == "" {
			t.Errorf("provider %+v lacks a base URL or key variable", pr)
		}
	}
}

func TestSQLitePath(t *testing.T) {
	for in, want := range map[string]string{
		"sqlite:///history.db": "history.db", "sqlite:////var/h.db": "/var/h.db", "sqlite://": ":memory:",
		"sqlite:///:memory:": ":memory:", "sqlite+aiosqlite:///a/b.db?mode=rw": "a/b.db",
	} {
		if got, ok := sqlitePath(in); !ok || got != want {
			t.Errorf("sqlitePath(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
	if _, ok := sqlitePath("postgresql://x"); ok {
		t.Error("postgresql accepted")
	}
}

func TestPythonTypes(t *testing.T) {
	for in, want := range map[string]string{
		"str":                    `{"type":"string"}`,
		"list[int]":              `{"items":{"type":"integer"},"type":"array"}`,
		"dict[str, float]":       `{"additionalProperties":{"type":"number"},"type":"object"}`,
		"int | None":             `{"anyOf":[{"type":"integer"},{"type":"null"}]}`,
		"Optional[bool]":         `{"anyOf":[{"type":"boolean"},{"type":"null"}]}`,
		"Literal['a', \"b\", 3]": `{"enum":["a","b",3]}`,
		"typing.List[str]":       `{"items":{"type":"string"},"type":"array"}`,
		"set[str]":               `{"items":{"type":"string"},"type":"array","uniqueItems":true}`,
		"tuple[int, ...]":        `{"items":{"type":"integer"},"type":"array"}`,
	} {
		s, err := pythonType(in)
		if err != "" {
			t.Errorf("%s: %s", in, err)
			continue
		}
		if got := mustJSON(t, s); got != want {
			t.Errorf("%s -> %s, want %s", in, got, want)
		}
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
