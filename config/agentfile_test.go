package config_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentpool/agentpool/config"
)

const reviewerMD = `---
name: code-reviewer
description: Reviews code for quality. Use after a change.
tools: Read, Grep, Glob, Bash, WebSearch, NotebookEdit
model: sonnet
color: red
---

You are a senior code reviewer.
`

func TestParseAgentFileClaudeFormat(t *testing.T) {
	def := config.ModelSpec{Type: config.ModelTest}
	a, warns, err := config.ParseAgentFile("r.md", []byte(reviewerMD), config.AgentFileOptions{
		DefaultModel: def, Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	if a.Name != "code-reviewer" || a.Description != "Reviews code for quality. Use after a change." || a.SystemPrompt != "You are a senior code reviewer." {
		t.Fatalf("agent = %+v", a)
	}
	if a.Model.Type != config.ModelTest {
		t.Errorf("sonnet without ANTHROPIC_DEFAULT_SONNET_MODEL = %+v, want the default model", a.Model)
	}
	var types []string
	for _, ts := range a.Toolsets {
		types = append(types, ts.Type)
		if ts.Type == config.ToolsetFileAccess && !slices.Equal(ts.Disabled, []string{"Write", "Edit", "LS"}) {
			t.Errorf("file_access disabled = %v", ts.Disabled)
		}
		if ts.Type == config.ToolsetExecution && !slices.Equal(ts.Disabled, []string{"BashOutput", "KillShell"}) {
			t.Errorf("execution disabled = %v", ts.Disabled)
		}
	}
	if !slices.Equal(types, []string{config.ToolsetFileAccess, config.ToolsetExecution}) {
		t.Errorf("toolsets = %v", types)
	}
	if len(warns) != 1 {
		t.Errorf("warnings = %q, want one (color is for Claude Code's interface)", warns)
	}
	joined := strings.Join(warns, "\n")
	for _, want := range []string{"r.md:4: tools: agentpool has no NotebookEdit, WebSearch"} {
		if !strings.Contains(joined, want) {
			t.Errorf("warnings %q lack %q", joined, want)
		}
	}
}

func TestParseAgentFileModels(t *testing.T) {
	env := map[string]string{"ANTHROPIC_DEFAULT_OPUS_MODEL": "claude-opus-4-1"}
	opts := config.AgentFileOptions{DefaultModel: config.ModelSpec{Type: config.ModelTest}, Getenv: func(k string) string { return env[k] }}
	for model, want := range map[string]config.ModelSpec{
		"inherit":            {Type: config.ModelTest},
		"opus":               {Type: config.ModelAnthropic, Model: "claude-opus-4-1"},
		"openai:gpt-4o-mini": {Type: config.ModelOpenAI, Model: "gpt-4o-mini"},
	} {
		a, _, err := config.ParseAgentFile("a.md", []byte("---\nname: a\ndescription: d\nmodel: "+model+"\n---\nbody"), opts)
		if err != nil {
			t.Fatalf("%s: %v", model, err)
		}
		if a.Model.Type != want.Type || a.Model.Model != want.Model {
			t.Errorf("model %s = %+v, want %+v", model, a.Model, want)
		}
		if len(a.Toolsets) != 4 {
			t.Errorf("no tools: toolsets = %+v, want file_access, execution, plan, fetch", a.Toolsets)
		}
	}
}

func TestParseAgentFileErrors(t *testing.T) {
	for _, c := range []struct{ name, data, want string }{
		{"no front matter", "# title\n", "x.md:1: an agent file starts with YAML front matter"},
		{"unclosed", "---\nname: a\n", "x.md:1: an agent file starts with YAML front matter"},
		{"bad yaml", "---\nname: a\ndescription: [x\n---\n", "x.md:3: invalid YAML"},
		{"no name", "---\ndescription: d\n---\n", "x.md:2: name: required"},
		{"bad name", "---\nname: a b\ndescription: d\n---\n", `x.md:2: name: "a b" is not a valid agent name`},
		{"no description", "---\nname: a\n---\n", "x.md:2: description: required"},
		{"bad tools", "---\nname: a\ndescription: d\ntools: {Read: true}\n---\n", "x.md:4: tools: expected a comma-separated list"},
		{"bad model", "---\nname: a\ndescription: d\nmodel: nosuch:model\n---\n", "x.md:4: model:"},
	} {
		_, _, err := config.ParseAgentFile("x.md", []byte(c.data), config.AgentFileOptions{Getenv: func(string) string { return "" }})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want %q", c.name, err, c.want)
		}
	}
}

func TestReadAgentFileBound(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.md")
	data := "---\nname: a\ndescription: d\n---\n" + strings.Repeat("x", int(config.AgentFiles.FileBytes))
	if err := os.WriteFile(big, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	_, _, err := config.ReadAgentFile(nil, big, config.AgentFileOptions{})
	if err == nil || !strings.Contains(err.Error(), big) {
		t.Fatalf("err = %v, want a bound error naming the file", err)
	}
}

func TestManifestFileAgents(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "agents"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "agents", "r.md"), []byte(reviewerMD), 0o600); err != nil {
		t.Fatal(err)
	}
	manifest := filepath.Join(dir, "agentpool.yaml")
	yml := "default_model: test\nagents:\n  main: {model: test}\nfile_agents:\n  reviewer: agents/r.md\n  other: {path: agents/r.md, type: claude}\n"
	if err := os.WriteFile(manifest, []byte(yml), 0o600); err != nil {
		t.Fatal(err)
	}
	m, err := config.Load(manifest)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(m.AgentOrder, []string{"main", "reviewer", "other"}) {
		t.Fatalf("agents = %v", m.AgentOrder)
	}
	if r := m.Agents["reviewer"]; r.SystemPrompt != "You are a senior code reviewer." || r.Line != 5 {
		t.Errorf("reviewer = %+v", r)
	}
	for _, c := range []struct{ yml, want string }{
		{"agents:\n  main: {model: test}\nfile_agents:\n  main: agents/r.md\n", `agentpool.yaml:4: file_agents.main: name "main" is already used`},
		{"file_agents:\n  x: {path: agents/r.md, type: opencode}\n", `file_agents.x.type: agent files of type "opencode" are not supported`},
		{"file_agents:\n  x: https://example.com/a.md\n", "file_agents.x: agent files are read from disk"},
	} {
		if err := os.WriteFile(manifest, []byte(c.yml), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := config.Load(manifest); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: err = %v, want %q", c.yml, err, c.want)
		}
	}
}
