package config

import (
	"errors"
	"io/fs"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/agentpool/agentpool/internal/bounded"
)

// fileAgents reads AgentPool's `file_agents:`, a mapping of agent names to
// markdown agent files (a path relative to the manifest, or {path, type}
// with type claude), and adds each file's agent under its key. Only
// Claude Code's format is read: OpenCode's and AgentPool's native front
// matter, and URLs, are refused by name.
func (p *parser) fileAgents(m *Manifest, e entry) {
	d := deref(e.val)
	if isNull(d) {
		return
	}
	if d.Kind != yaml.MappingNode {
		p.add(e.val.Line, "file_agents", "expected a mapping of agent names to agent files, got %s", describe(d))
		return
	}
	budget := bounded.New(AgentFiles)
	for _, fe := range p.entries(d, "file_agents") {
		path := "file_agents." + fe.key
		p.checkName(fe.line(), path, fe.key)
		file := p.fileAgentPath(fe, path)
		if file == "" {
			continue
		}
		if a, clash := m.Agents[fe.key]; clash {
			p.add(fe.line(), path, "name %q is already used by the agent at line %s", fe.key, p.lineRef(a.Line))
			continue
		}
		if strings.Contains(file, "://") {
			p.add(fe.val.Line, path, "agent files are read from disk: %q is a URL (download it and name the file)", file)
			continue
		}
		if !filepath.IsAbs(file) {
			file = filepath.Join(filepath.Dir(p.file), file)
		}
		def := DefaultModelSpec()
		if p.defaultModel != nil {
			def = *p.defaultModel
		}
		a, warns, err := ReadAgentFile(budget, file, AgentFileOptions{Name: fe.key, DefaultModel: def, Options: p.opts})
		if err != nil {
			var ce *Error
			if errors.As(err, &ce) {
				p.issues = append(p.issues, ce.Issues...)
			} else if errors.Is(err, fs.ErrNotExist) {
				p.add(fe.val.Line, path, "agent file %q does not exist (%s)", p.fileAgentPath(fe, path), file)
			} else {
				p.add(fe.val.Line, path, "%v", err)
			}
			continue
		}
		for _, w := range warns {
			p.warn(fe.line(), path, "%s", w)
		}
		a.Line = fe.line()
		for i := range a.Toolsets {
			a.Toolsets[i].Line = fe.line()
		}
		m.Agents[a.Name] = a
		m.AgentOrder = append(m.AgentOrder, a.Name)
	}
}

// fileAgentPath reads one entry's file: a string, or {path, type}.
func (p *parser) fileAgentPath(fe entry, path string) string {
	d := deref(fe.val)
	if d.Kind == yaml.ScalarNode {
		return strings.TrimSpace(p.requiredStr(fe.val, path))
	}
	f, _ := p.object(fe.val, path, []string{"path", "type"})
	if te, ok := f["type"]; ok {
		if t := p.str(te.val, path+".type"); t != "" && t != "claude" {
			p.add(te.val.Line, path+".type", "agent files of type %q are not supported: only Claude Code's format (type: claude) is read", t)
			return ""
		}
	}
	pe, ok := f["path"]
	if !ok {
		p.add(fe.line(), path+".path", "required: the agent file")
		return ""
	}
	return strings.TrimSpace(p.requiredStr(pe.val, path+".path"))
}
