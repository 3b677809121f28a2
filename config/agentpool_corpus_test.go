package config

import (
	"encoding/json"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// The AgentPool-format corpus (testdata/agentpool) parses into what each
// key means; pool/agentpool_corpus_test.go runs it.

func loadCorpus(t *testing.T, name string) *Manifest {
	t.Helper()
	m, err := Load(filepath.Join("testdata", "agentpool", name))
	if err != nil {
		t.Fatalf("Load %s:\n%v", name, err)
	}
	return m
}

func warningTexts(m *Manifest) []string {
	var out []string
	for _, w := range m.Warnings {
		out = append(out, w.String())
	}
	return out
}

func TestCorpusAcceptedKeys(t *testing.T) {
	m := loadCorpus(t, "keys.yaml")
	if m.Name != "accepted-keys" {
		t.Errorf("Name = %q", m.Name)
	}
	host := m.Agents["host"]
	if host.DisplayName != "The host" {
		t.Errorf("host.DisplayName = %q", host.DisplayName)
	}
	if got := toolsetTypesOf(host); !slices.Equal(got, []string{ToolsetPlan, ToolsetSubagent}) {
		t.Errorf("host toolsets = %v (tools and toolsets merge, in file order)", got)
	}
	if host.ToolApproval["*"] != ApprovalAllow {
		t.Errorf("requires_tool_confirmation: never -> tool_approval %v", host.ToolApproval)
	}
	if host.MaxTurns != 12 {
		t.Errorf("usage_limits.request_limit -> MaxTurns %d, want 12", host.MaxTurns)
	}
	if ms := host.Model; ms.Type != ModelTest || !ms.CallAllTools || ms.Seed != 3 {
		t.Errorf("host model = %+v", ms)
	}
	quiet := m.Agents["quiet"]
	if quiet.Description != "Answers in one line." {
		t.Errorf("anchor merge: quiet.Description = %q", quiet.Description)
	}
	if ms := quiet.Model; ms.Type != ModelOpenAI || ms.Model != "gpt-4o-mini" || ms.Timeout != 30*time.Second {
		t.Errorf("quiet model = %+v", ms)
	}
	if ms := m.Agents["plain"].Model; ms.Type != ModelTest || ms.CustomOutputText != "Default model answer." {
		t.Errorf("an agent without model gets default_model, got %+v", ms)
	}
	if pair := m.Teams["pair"]; pair.Mode != ModeParallel || pair.DisplayName != "The pair" {
		t.Errorf("team pair = %+v", pair)
	}
	if s := m.MCPServers[0]; s.Timeout != 30*time.Second || s.Enabled {
		t.Errorf("mcp server = %+v", s)
	}
	want := []string{
		`testdata/agentpool/keys.yaml:33: agents.host.session: ignored: agentpool stores every session and loads none by name (continue one with ` + "`agentpool run --session ID`)",
		`testdata/agentpool/keys.yaml:35: agents.host.event_handlers[0]: ignored: agentpool's CLI and servers show the event stream themselves`,
	}
	if got := warningTexts(m); !slices.Equal(got, want) {
		t.Errorf("warnings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func toolsetTypesOf(a *Agent) []string {
	var out []string
	for _, ts := range a.Toolsets {
		out = append(out, ts.Type)
	}
	return out
}

func TestCorpusTestModel(t *testing.T) {
	m := loadCorpus(t, "testmodel.yaml")
	if ms := m.Agents["caller"].Model; !ms.CallAllTools || ms.CallTools != nil {
		t.Errorf("model: test calls every tool by default, got %+v", ms)
	}
	listed := m.Agents["listed"].Model
	if !listed.CallAllTools || listed.ToolArgs["TodoWrite"] == nil || listed.CustomOutputText != "Listed done." {
		t.Errorf("tool_args without call_tools: %+v", listed)
	}
	if ms := m.Agents["chosen"].Model; ms.CallAllTools || !slices.Equal(ms.CallTools, []string{"list_available_nodes"}) || ms.Seed != 7 {
		t.Errorf("chosen = %+v", ms)
	}
	if ms := m.Agents["silent"].Model; ms.CallAllTools || ms.CallTools == nil || len(ms.CallTools) != 0 {
		t.Errorf("call_tools: [] calls nothing, got %+v", ms)
	}
}

func TestCorpusModelIDs(t *testing.T) {
	m := loadCorpus(t, "models.yaml")
	for name, want := range map[string][3]string{ // type, provider, model
		"router":         {ModelOpenAI, "openrouter", "openai/gpt-4o-mini"},
		"fast":           {ModelOpenAI, "groq", "llama-3.3-70b-versatile"},
		"local":          {ModelOpenAI, "ollama", "llama3.2"},
		"deep":           {ModelOpenAI, "deepseek", "deepseek-chat"},
		"mist":           {ModelOpenAI, "mistral", "mistral-small-latest"},
		"together":       {ModelOpenAI, "together", "meta-llama/Llama-3.3-70B-Instruct-Turbo"},
		"bare_openai":    {ModelOpenAI, "", "gpt-4o-mini"},
		"bare_anthropic": {ModelAnthropic, "", "claude-3-5-haiku-latest"},
		"tuned":          {ModelOpenAI, "", "gpt-4o-mini"},
		"untyped":        {ModelAnthropic, "", "claude-3-5-haiku-latest"},
		"claude":         {ModelAnthropic, "", "claude-3-5-haiku-latest"},
		"routed":         {ModelOpenAI, "openrouter", "anthropic/claude-3.5-haiku"},
		"documented":     {ModelOpenAI, "groq", "llama-3.1-8b-instant"},
	} {
		ms := m.Agents[name].Model
		if got := [3]string{ms.Type, ms.Provider, ms.Model}; got != want {
			t.Errorf("%s: (type, provider, model) = %q, want %q", name, got, want)
		}
	}
	tuned := m.Agents["tuned"].Model
	st := tuned.Settings
	if *tuned.Temperature != 0.4 || tuned.MaxTokens != 800 || tuned.Timeout != 45500*time.Millisecond ||
		*st.TopP != 0.9 || *st.Seed != 11 || *st.PresencePenalty != 0.1 || *st.FrequencyPenalty != 0.2 ||
		!slices.Equal(st.Stop, []string{"END"}) || *st.ParallelToolCalls {
		t.Errorf("tuned settings = %+v %+v", tuned, st)
	}
	if ms := m.Agents["documented"].Model; ms.Temperature == nil || *ms.Temperature != 0.5 {
		t.Errorf("documented = %+v", ms)
	}
	fb := m.Agents["resilient"].Model
	if fb.Type != ModelFallback || len(fb.Fallback) != 2 || fb.Fallback[0].Type != ModelScripted || fb.Fallback[1].CustomOutputText != "The second model answered." {
		t.Errorf("fallback = %+v", fb)
	}
	if len(m.Warnings) != 0 {
		t.Errorf("warnings: %v", warningTexts(m))
	}
}

func TestCorpusDelegation(t *testing.T) {
	m := loadCorpus(t, "delegation.yaml")
	if got := toolsetTypesOf(m.Agents["coordinator"]); !slices.Equal(got, []string{ToolsetSubagent}) {
		t.Errorf("agent_management -> %v, want [subagent]", got)
	}
	lead := m.Agents["lead"]
	if len(lead.Workers) != 1 || lead.Workers[0].Name != "writer" || !lead.Workers[0].ResetHistoryOnRun {
		t.Errorf("workers toolset -> workers %+v", lead.Workers)
	}
	if got := toolsetTypesOf(lead); !slices.Equal(got, []string{ToolsetSubagent}) {
		t.Errorf("lead toolsets = %v", got)
	}
}

func TestCorpusToolsets(t *testing.T) {
	m := loadCorpus(t, "toolsets.yaml")
	w := m.Agents["worker"]
	if got := toolsetTypesOf(w); !slices.Equal(got, []string{ToolsetFileAccess, ToolsetExecution, ToolsetPlan, ToolsetSkills, ToolsetFetch}) {
		t.Errorf("toolsets = %v", got)
	}
	if ex := w.Toolsets[1]; !slices.Equal(ex.Disabled, []string{"KillShell"}) {
		t.Errorf("execution.Disabled = %v", ex.Disabled)
	}
	if got := len(m.Warnings); got != 2 {
		t.Errorf("%d warnings (file_access and plan options): %v", got, warningTexts(m))
	}
	if !m.Skills.Set || !slices.Equal(m.Skills.Paths, []string{"skills"}) || m.Skills.IncludeDefault {
		t.Errorf("skills = %+v", m.Skills)
	}
}

func TestCorpusComposition(t *testing.T) {
	m := loadCorpus(t, "composition.yaml")
	tpl := m.Agents["template"] // from include/base.yaml
	if tpl == nil || tpl.SystemPrompt != "Keep it short." || tpl.Line != 6 {
		t.Fatalf("INHERIT: template = %+v", tpl)
	}
	d := m.Agents["drafter"]
	if d.Description != tpl.Description || d.Model.CustomOutputText != "A draft of the release notes." {
		t.Errorf("inherits: drafter = %+v", d)
	}
	wantPrompt := "Draft short release notes.\n\nDouble-check every figure.\n\nWrite in plain language. Use bullet points."
	if d.SystemPrompt != wantPrompt {
		t.Errorf("drafter prompt = %q, want %q (its own system_prompt replaces the inherited one)", d.SystemPrompt, wantPrompt)
	}
	if len(d.Connections) != 2 {
		t.Fatalf("connections = %+v", d.Connections)
	}
	c0, c1 := d.Connections[0], d.Connections[1]
	if c0.Target != "reviewer" || !c0.Wait || c0.Filter.Type != CondWordMatch || c0.Stop.MaxMessages != 100 {
		t.Errorf("connection 0 = %+v", c0)
	}
	if c1.Target != "archivist" || c1.Wait || c1.Stop.Type != CondOr || len(c1.Stop.Conditions) != 2 || c1.Stop.Conditions[0].MaxCost != 5 {
		t.Errorf("connection 1 = %+v", c1)
	}
	out := m.Agents["reviewer"].Output
	if out == nil || out.Name != "Verdict" || out.Description != "A review verdict." || out.Retries != DefaultOutputRetries {
		t.Fatalf("reviewer output = %+v", out)
	}
	var schema map[string]any
	if err := json.Unmarshal(out.Schema, &schema); err != nil {
		t.Fatal(err)
	}
	props := schema["properties"].(map[string]any)
	wantProps := map[string]any{
		"approved": map[string]any{"type": "boolean", "description": "Whether the draft can ship"},
		"score":    map[string]any{"type": "integer", "minimum": 0.0, "maximum": 10.0},
		"notes":    map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
		"tone":     map[string]any{"type": "string", "enum": []any{"plain", "formal"}},
	}
	if !reflect.DeepEqual(props, wantProps) {
		t.Errorf("properties = %v\nwant %v", props, wantProps)
	}
	if req := schema["required"].([]any); len(req) != 4 {
		t.Errorf("required = %v", req)
	}
	if o := m.Agents["summarizer"].Output; o == nil || o.Name != "summary_result" {
		t.Errorf("inline output_type = %+v", o)
	}
	if m.Storage.Path != ":memory:" {
		t.Errorf("storage providers -> Path %q, want :memory:", m.Storage.Path)
	}
	if o := m.Observability; !o.Enabled || o.Provider != "custom" || o.Endpoint != "http://127.0.0.1:4318" || o.Headers["x-team"] != "docs" {
		t.Errorf("observability = %+v", o)
	}
	// A custom observability provider with an endpoint is exported to:
	// no warning.
	if got := len(m.Warnings); got != 2 {
		t.Errorf("%d warnings, want 2 (text log, log_commands): %v", got, warningTexts(m))
	}
}

func TestCorpusSkills(t *testing.T) {
	m := loadCorpus(t, "skills.yaml")
	if s := m.Skills; !s.Set || s.MaxSkills != 10 || s.InjectAll || s.IncludeDefault {
		t.Errorf("skills = %+v", s)
	}
}

func TestCorpusFork(t *testing.T) {
	m := loadCorpus(t, "fork.yaml")
	if !slices.Equal(m.AgentOrder, []string{"writer", "reviewer"}) || m.Teams["release"] == nil {
		t.Fatalf("agents %v, teams %v", m.AgentOrder, m.TeamOrder)
	}
	w := m.Agents["writer"]
	if w.SystemPrompt != "Draft short release notes." || w.Model.PreStreamDelay != 10*time.Millisecond {
		t.Errorf("writer = %q, %+v", w.SystemPrompt, w.Model)
	}
	if got := toolsetTypesOf(w); !slices.Equal(got, []string{ToolsetPlan, ToolsetSubagent}) {
		t.Errorf("writer toolsets = %v (fetch is enabled: false)", got)
	}
	if ms := m.Agents["reviewer"].Model; ms.Type != ModelTest || ms.CustomOutputText != "Looks good." {
		t.Errorf("reviewer model = %+v", ms)
	}
	if got := warningTexts(m); len(got) != 1 || !strings.Contains(got[0], "fork.yaml:25: agents.writer.tools[2]: agent_cli is mapped onto the subagent toolset") {
		t.Errorf("warnings = %v", got)
	}
}
