package claudecode_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentpool/agentpool/claudecode"
	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/pool"
)

func write(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func noEnv(string) string { return "" }

func TestParseSources(t *testing.T) {
	s, err := claudecode.ParseSources(" user, local")
	if err != nil || s != (claudecode.Sources{User: true, Local: true}) || s.String() != "user,local" {
		t.Errorf("ParseSources = %+v, %v", s, err)
	}
	if s, err := claudecode.ParseSources(""); err != nil || s != (claudecode.Sources{}) {
		t.Errorf(`ParseSources("") = %+v, %v`, s, err)
	}
	if _, err := claudecode.ParseSources("user,policy"); err == nil || !strings.Contains(err.Error(), `unknown source "policy"`) {
		t.Errorf("err = %v", err)
	}
}

// The settings files by scope, what the permission rules read, the hook
// files in precedence order, and enabledPlugins merged with the higher
// file winning.
func TestDiscoverSettingsAndPlugins(t *testing.T) {
	dir, home := t.TempDir(), t.TempDir()
	write(t, filepath.Join(home, ".claude", "settings.json"), `{"enabledPlugins": {"a@m": true, "b@m": true}}`)
	write(t, filepath.Join(dir, ".claude", "settings.local.json"), `{"enabledPlugins": {"b@m": false, "c@m": true}}`)
	pa := filepath.Join(home, ".claude", "plugins", "cache", "a")
	write(t, filepath.Join(pa, "hooks", "hooks.json"), `{}`)
	write(t, filepath.Join(pa, "commands", "hi.md"), "---\ndescription: Greets.\n---\nSay hi to $ARGUMENTS.\n")
	write(t, filepath.Join(home, ".claude", "plugins", "installed_plugins.json"),
		`{"version": 2, "plugins": {"a@m": [{"scope": "project", "projectPath": "/elsewhere", "installPath": "/nope"}, {"scope": "user", "installPath": "`+pa+`"}]}}`)
	write(t, filepath.Join(dir, ".claude", "commands", "hi.md"), "Project hi: $ARGUMENTS")

	f, err := claudecode.Discover(claudecode.Options{ProjectDir: dir, Home: home, Sources: claudecode.AllSources(), Getenv: noEnv})
	if err != nil {
		t.Fatal(err)
	}
	var scopes []string
	for _, s := range f.Settings {
		scopes = append(scopes, s.Scope+":"+map[bool]string{true: "yes", false: "no"}[s.Exists])
	}
	if !slices.Equal(scopes, []string{"user:yes", "project:no", "local:yes"}) {
		t.Errorf("settings = %v", scopes)
	}
	if len(f.Plugins) != 1 || f.Plugins[0].Dir != pa || f.Plugins[0].Hooks == "" {
		t.Errorf("plugins = %+v", f.Plugins)
	}
	if len(f.Problems) != 1 || !strings.Contains(f.Problems[0], "plugin c@m is enabled in "+filepath.Join(dir, ".claude", "settings.local.json")+" but not installed") {
		t.Errorf("problems = %q", f.Problems)
	}
	want := []string{filepath.Join(home, ".claude", "settings.json"), filepath.Join(dir, ".claude", "settings.local.json"), pa}
	if got := f.HookFiles(); !slices.Equal(got, want) {
		t.Errorf("HookFiles = %q, want %q", got, want)
	}
	// The last command of a name wins (the project's over the user's),
	// as pool.Options.Commands keeps it.
	byName := map[string]pool.Command{}
	for _, c := range f.PoolCommands() {
		byName[c.Name] = c
	}
	if got := byName["hi"].Expand("Ann and Bo"); got != "Project hi: Ann and Bo" || byName["hi"].Source != "project" {
		t.Errorf("hi = %+v, expands to %q (the project's command wins)", byName["hi"], got)
	}

	f, err = claudecode.Discover(claudecode.Options{ProjectDir: dir, Home: home, Sources: claudecode.Sources{Project: true}, Getenv: noEnv})
	if err != nil {
		t.Fatal(err)
	}
	rf := f.RuleFiles()
	if rf.User != "" || !rf.SkipLocal || rf.Local != filepath.Join(dir, ".claude", "settings.local.json") || len(f.Plugins) != 0 {
		t.Errorf("project only: rules %+v, plugins %+v", rf, f.Plugins)
	}

	if _, err := claudecode.Discover(claudecode.Options{ProjectDir: dir, Home: home, PluginDirs: []string{filepath.Join(dir, "none")}, Getenv: noEnv}); err == nil || !strings.Contains(err.Error(), "--plugin-dir") {
		t.Errorf("missing --plugin-dir: %v", err)
	}
}

// Apply: the manifest's agent wins, then the project's over the user's;
// the entry point gets the subagent toolset.
func TestApplyAgents(t *testing.T) {
	dir, home := t.TempDir(), t.TempDir()
	agent := func(name, desc string) string {
		return "---\nname: " + name + "\ndescription: " + desc + "\n---\nbody\n"
	}
	write(t, filepath.Join(home, ".claude", "agents", "a.md"), agent("shared", "user"))
	write(t, filepath.Join(home, ".claude", "agents", "b.md"), agent("lead", "user"))
	write(t, filepath.Join(dir, ".claude", "agents", "a.md"), agent("shared", "project"))
	f, err := claudecode.Discover(claudecode.Options{ProjectDir: dir, Home: home, Sources: claudecode.AllSources(), Getenv: noEnv})
	if err != nil {
		t.Fatal(err)
	}
	m, err := config.Parse("agentpool.yaml", []byte("agents:\n  lead: {model: test}\n"))
	if err != nil {
		t.Fatal(err)
	}
	notes := f.Apply(m)
	if a := m.Agents["shared"]; a == nil || a.Description != "project" {
		t.Fatalf("shared = %+v", a)
	}
	if m.Agents["lead"].Description != "" || len(m.Agents["lead"].Toolsets) != 1 || m.Agents["lead"].Toolsets[0].Type != config.ToolsetSubagent {
		t.Errorf("lead = %+v", m.Agents["lead"])
	}
	joined := strings.Join(notes, "\n")
	for _, w := range []string{"agent lead of the manifest wins", "wins over " + filepath.Join(home, ".claude", "agents", "a.md"), "agent lead gets the subagent toolset"} {
		if !strings.Contains(joined, w) {
			t.Errorf("notes %q lack %q", joined, w)
		}
	}
}
