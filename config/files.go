package config

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"go.yaml.in/yaml/v3"

	"github.com/agentpool/agentpool/internal/bounded"
)

// CheckFiles reports the files the manifest names that cannot be used: hook
// settings files (hooks.settings, relative to the manifest's directory)
// that do not exist or are directories other than Claude Code plugins. Each problem is an Issue at the
// line of its entry, in an *Error; name is the file name for messages (as
// given to Load). Load does not look at these files, so that a manifest can
// be read where they are absent; `agentpool validate` and `run` check them.
func CheckFiles(name string, m *Manifest) error {
	if len(m.Hooks.Settings) == 0 {
		return nil
	}
	p := &parser{file: name}
	lines, list := settingsLines(m.Path)
	for i, s := range m.Hooks.Settings {
		field, line := "hooks.settings", 0
		if list {
			field = index(field, i)
		}
		if i < len(lines) {
			line = lines[i]
		}
		path := m.ResolvePath(s)
		switch info, err := os.Stat(path); {
		case errors.Is(err, fs.ErrNotExist):
			p.add(line, field, "settings file %q does not exist (%s)", s, path)
		case err != nil:
			p.add(line, field, "settings file %q cannot be read: %v", s, err)
		case info.IsDir() && !isPluginDir(path):
			p.add(line, field, "settings file %q is a directory (%s) and no Claude Code plugin: it has neither hooks/hooks.json nor .claude-plugin", s, path)
		}
	}
	return p.err()
}

// isPluginDir tells a Claude Code plugin directory, which hooks.settings
// may name (its hooks/hooks.json is read), from another directory.
func isPluginDir(dir string) bool {
	if fi, err := os.Stat(filepath.Join(dir, "hooks", "hooks.json")); err == nil && fi.Mode().IsRegular() {
		return true
	}
	fi, err := os.Stat(filepath.Join(dir, ".claude-plugin"))
	return err == nil && fi.IsDir()
}

// settingsLines reads the manifest file again for the lines of its
// hooks.settings entries (the Manifest keeps no lines for them); list says
// whether they are written as a list. Nothing is found when the file
// cannot be read: the issues then have no line.
func settingsLines(path string) (lines []int, list bool) {
	if path == "" {
		return nil, false
	}
	p := &parser{budget: bounded.New(bounded.Config)}
	data, err := p.budget.ReadFile(path)
	if err != nil {
		return nil, false
	}
	root := p.decode(data)
	if root == nil {
		return nil, false
	}
	for _, top := range p.entries(root, "") {
		if top.key != "hooks" {
			continue
		}
		for _, h := range p.entries(top.val, "hooks") {
			if h.key != "settings" {
				continue
			}
			d := deref(h.val)
			if d.Kind != yaml.SequenceNode {
				return []int{h.val.Line}, false
			}
			for _, c := range d.Content {
				lines = append(lines, c.Line)
			}
			return lines, true
		}
	}
	return nil, false
}
