package claudecode

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/agentpool/agentpool/approval/settingsrules"
	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/internal/bounded"
)

// Options say where to look.
type Options struct {
	// ProjectDir is the project's directory (made absolute).
	ProjectDir string
	// Home is the user's home directory; os.UserHomeDir when empty. The
	// user's Claude directory is $CLAUDE_CONFIG_DIR when set, else
	// Home/.claude.
	Home string
	// Sources are the settings files read (AllSources for Claude Code's
	// default).
	Sources Sources
	// PluginDirs are --plugin-dir directories, loaded whatever the
	// settings say.
	PluginDirs []string
	// Agent says how agent files are read: the model of inherit and the
	// aliases, the model types the program builds.
	Agent config.AgentFileOptions
	// Getenv reads CLAUDE_CONFIG_DIR; os.Getenv when nil.
	Getenv func(string) string
}

// SettingsFile is one settings file of a scope.
type SettingsFile struct {
	Scope  string
	Path   string
	Exists bool
}

// Plugin is a Claude Code plugin directory.
type Plugin struct {
	Name string
	Dir  string
	// From says why it is loaded: "enabledPlugins in FILE" or
	// "--plugin-dir".
	From string
	// Hooks is its hooks/hooks.json, "" when it has none.
	Hooks string
}

// AgentFile is an agent read from a markdown file.
type AgentFile struct {
	Scope string // ScopeUser, ScopeProject or ScopePlugin
	Path  string
	Agent *config.Agent
	// Warnings are what the file asks that agentpool does not do.
	Warnings []string
}

// Found is what Discover found.
type Found struct {
	ProjectDir string
	UserDir    string
	Sources    Sources
	// Settings are the settings files of the chosen sources, lowest
	// precedence first, present or not.
	Settings []SettingsFile
	Plugins  []Plugin
	// Agents are the agent files, lowest precedence first; Apply keeps
	// the last of each name.
	Agents   []AgentFile
	Commands []Command
	// Problems are what was found and cannot be used.
	Problems []string
}

// Discover finds the settings files, plugins, agents and commands.
func Discover(opts Options) (*Found, error) {
	getenv := opts.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	dir, err := filepath.Abs(opts.ProjectDir)
	if err != nil {
		return nil, err
	}
	f := &Found{ProjectDir: dir, Sources: opts.Sources}
	if d := getenv("CLAUDE_CONFIG_DIR"); d != "" {
		f.UserDir = d
	} else {
		home := opts.Home
		if home == "" {
			home, _ = os.UserHomeDir()
		}
		if home != "" {
			f.UserDir = filepath.Join(home, ".claude")
		}
	}
	for _, s := range []SettingsFile{
		{Scope: ScopeUser, Path: f.userPath("settings.json")},
		{Scope: ScopeProject, Path: filepath.Join(dir, ".claude", "settings.json")},
		{Scope: ScopeLocal, Path: filepath.Join(dir, ".claude", "settings.local.json")},
	} {
		if s.Path == "" || !opts.Sources.has(s.Scope) {
			continue
		}
		s.Exists = isFile(s.Path)
		f.Settings = append(f.Settings, s)
	}
	enabled, err := f.enabledPlugins()
	if err != nil {
		return nil, err
	}
	if err := f.resolvePlugins(enabled); err != nil {
		return nil, err
	}
	for _, d := range opts.PluginDirs {
		abs, err := filepath.Abs(d)
		if err != nil {
			return nil, err
		}
		if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
			return nil, fmt.Errorf("--plugin-dir %s: not a directory", d)
		}
		f.addPlugin(abs, "--plugin-dir")
	}
	budget := bounded.New(config.AgentFiles)
	var errs []error
	for _, p := range f.Plugins {
		errs = append(errs, f.readAgents(budget, filepath.Join(p.Dir, "agents"), ScopePlugin, opts.Agent))
	}
	if opts.Sources.User && f.UserDir != "" {
		errs = append(errs, f.readAgents(budget, filepath.Join(f.UserDir, "agents"), ScopeUser, opts.Agent))
	}
	if opts.Sources.Project {
		errs = append(errs, f.readAgents(budget, filepath.Join(dir, ".claude", "agents"), ScopeProject, opts.Agent))
	}
	for _, p := range f.Plugins {
		errs = append(errs, f.readCommands(budget, filepath.Join(p.Dir, "commands"), ScopePlugin))
	}
	if opts.Sources.User && f.UserDir != "" {
		errs = append(errs, f.readCommands(budget, filepath.Join(f.UserDir, "commands"), ScopeUser))
	}
	if opts.Sources.Project {
		errs = append(errs, f.readCommands(budget, filepath.Join(dir, ".claude", "commands"), ScopeProject))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return f, nil
}

func (f *Found) userPath(elem ...string) string {
	if f.UserDir == "" {
		return ""
	}
	return filepath.Join(append([]string{f.UserDir}, elem...)...)
}

// RuleFiles are the files approval/settingsrules reads the permission
// rules of: the same chosen settings files. "Always" answers are written
// to the local file whatever the sources.
func (f *Found) RuleFiles() settingsrules.Files {
	out := settingsrules.Files{}
	for _, s := range f.Settings {
		switch s.Scope {
		case ScopeUser:
			out.User = s.Path
		case ScopeProject:
			out.Project = s.Path
		}
	}
	out.Local = filepath.Join(f.ProjectDir, ".claude", "settings.local.json")
	out.SkipLocal = !f.Sources.Local
	return out
}

// HookFiles are the settings files and plugin directories whose hooks
// run, in precedence order: the settings files that exist, then each
// plugin with hooks.
func (f *Found) HookFiles() []string {
	var out []string
	for _, s := range f.Settings {
		if s.Exists {
			out = append(out, s.Path)
		}
	}
	for _, p := range f.Plugins {
		if p.Hooks != "" {
			out = append(out, p.Dir)
		}
	}
	return out
}

// enabledPlugins merges enabledPlugins over the settings files: a higher
// file's value for a plugin wins. The value is the file that enabled it.
func (f *Found) enabledPlugins() (map[string]string, error) {
	budget := bounded.New(bounded.Config)
	out := map[string]string{}
	for _, s := range f.Settings {
		if !s.Exists {
			continue
		}
		data, err := budget.ReadFile(s.Path)
		if err == nil {
			err = budget.CheckJSON(data)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.Path, err)
		}
		var top struct {
			Enabled map[string]json.RawMessage `json:"enabledPlugins"`
		}
		if err := json.Unmarshal(data, &top); err != nil {
			return nil, jsonError(s.Path, data, err)
		}
		for id, v := range top.Enabled {
			var on bool
			if err := json.Unmarshal(v, &on); err != nil {
				// Claude Code also allows a list of versions: enabled.
				on = string(v) != "null"
			}
			if on {
				out[id] = s.Path
			} else {
				delete(out, id)
			}
		}
	}
	return out, nil
}

// resolvePlugins finds each enabled plugin's directory in
// installed_plugins.json.
func (f *Found) resolvePlugins(enabled map[string]string) error {
	if len(enabled) == 0 {
		return nil
	}
	ids := make([]string, 0, len(enabled))
	for id := range enabled {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	installed, err := f.installed()
	if err != nil {
		return err
	}
	for _, id := range ids {
		dir := installed[id]
		if dir == "" {
			f.Problems = append(f.Problems, fmt.Sprintf("plugin %s is enabled in %s but not installed (%s has no entry for it)", id, enabled[id], f.userPath("plugins", "installed_plugins.json")))
			continue
		}
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			f.Problems = append(f.Problems, fmt.Sprintf("plugin %s (enabled in %s): its directory %s is missing", id, enabled[id], dir))
			continue
		}
		f.addPlugin(dir, "enabledPlugins in "+enabled[id])
	}
	return nil
}

// installed reads installed_plugins.json: plugin id -> directory, the
// installation for this project preferred over the user's.
func (f *Found) installed() (map[string]string, error) {
	path := f.userPath("plugins", "installed_plugins.json")
	if path == "" || !isFile(path) {
		return map[string]string{}, nil
	}
	budget := bounded.New(bounded.Config)
	data, err := budget.ReadFile(path)
	if err == nil {
		err = budget.CheckJSON(data)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var top struct {
		Plugins map[string]json.RawMessage `json:"plugins"`
	}
	if err := json.Unmarshal(data, &top); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	type entry struct {
		Scope       string `json:"scope"`
		ProjectPath string `json:"projectPath"`
		InstallPath string `json:"installPath"`
	}
	out := map[string]string{}
	for id, raw := range top.Plugins {
		var list []entry
		if err := json.Unmarshal(raw, &list); err != nil {
			var one entry // version 1: one installation
			if err := json.Unmarshal(raw, &one); err != nil {
				return nil, fmt.Errorf("%s: plugins.%s: %v", path, id, err)
			}
			list = []entry{one}
		}
		for _, e := range list {
			switch {
			case e.InstallPath == "":
			case e.ProjectPath != "" && filepath.Clean(e.ProjectPath) == f.ProjectDir:
				out[id] = e.InstallPath
			case e.ProjectPath == "" && out[id] == "":
				out[id] = e.InstallPath
			}
		}
		if dir := out[id]; strings.HasPrefix(dir, "~/") {
			out[id] = filepath.Join(filepath.Dir(f.UserDir), dir[2:])
		}
	}
	return out, nil
}

// addPlugin adds a plugin directory once.
func (f *Found) addPlugin(dir, from string) {
	for _, p := range f.Plugins {
		if p.Dir == dir {
			return
		}
	}
	p := Plugin{Name: filepath.Base(dir), Dir: dir, From: from}
	if data, err := bounded.New(bounded.Config).ReadFile(filepath.Join(dir, ".claude-plugin", "plugin.json")); err == nil {
		var meta struct {
			Name string `json:"name"`
		}
		if json.Unmarshal(data, &meta) == nil && meta.Name != "" {
			p.Name = meta.Name
		}
	}
	if h := filepath.Join(dir, "hooks", "hooks.json"); isFile(h) {
		p.Hooks = h
	}
	f.Plugins = append(f.Plugins, p)
}

// readAgents reads the *.md files of dir (none when it does not exist).
func (f *Found) readAgents(budget *bounded.Budget, dir, scope string, opts config.AgentFileOptions) error {
	files, err := mdFiles(dir)
	if err != nil {
		return err
	}
	var errs []error
	for _, path := range files {
		a, warns, err := config.ReadAgentFile(budget, path, opts)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		f.Agents = append(f.Agents, AgentFile{Scope: scope, Path: path, Agent: a, Warnings: warns})
	}
	return errors.Join(errs...)
}

// mdFiles lists the markdown files of dir, sorted.
func mdFiles(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		if !e.IsDir() && strings.HasSuffix(e.Name(), ".md") {
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	if len(out) > config.MaxAgentFiles {
		return nil, fmt.Errorf("%s: %d markdown files, more than the %d read", dir, len(out), config.MaxAgentFiles)
	}
	return out, nil
}

// jsonError names the file and the line of a JSON error.
func jsonError(path string, data []byte, err error) error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		line := 1 + bytes.Count(data[:min(int(se.Offset), len(data))], []byte("\n"))
		return fmt.Errorf("%s:%d: invalid JSON: %v", path, line, se)
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		line := 1 + bytes.Count(data[:min(int(te.Offset), len(data))], []byte("\n"))
		return fmt.Errorf("%s:%d: %s: expected %s, got JSON %s", path, line, te.Field, te.Type, te.Value)
	}
	return fmt.Errorf("%s: %v", path, err)
}

func isFile(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular()
}
