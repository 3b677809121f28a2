// Tools given as Python code: AgentPool's `type: import` tools, entries
// with an `import_path`, dotted names in `tools:`, and the `import_tools`
// and `custom` toolsets. A Go runtime cannot import them, but an agent
// without them is still an agent: each is skipped with a warning at its
// line that names it, and an agent left without any tool is warned about
// once more, so `agentpool validate` and `agentpool run` (on stderr) say
// exactly what will not be there.

package config

import (
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"
)

// pythonTool is one tool (or toolset class) of Python code that an agent
// lists: skipped.
type pythonTool struct {
	line int
	path string // the field of the entry, e.g. agents.a.tools[0]
	name string // the tool's name: its `name`, else the function's
	ref  string // the import path as written
	set  bool   // a toolset class (`type: custom`), not one function
}

// pythonToolEntry reports whether entry c (of `tools:` or `toolsets:`)
// names Python code, and records it in l unless it is `enabled: false`.
// The entry's other keys (AgentPool's and its plugins' options of a
// Python tool: description, hints, priority, ...) are not checked: the
// entry is skipped whatever they say.
func (o compatKeys) pythonToolEntry(c *yaml.Node, ip string, l *toolsetList) bool {
	p := o.p
	d := deref(c)
	if d.Kind == yaml.ScalarNode {
		if isNull(d) || !pythonRef(d.Value) {
			return false
		}
		l.python = append(l.python, pythonTool{line: c.Line, path: ip, name: funcName(d.Value), ref: d.Value})
		return true
	}
	if d.Kind != yaml.MappingNode {
		return false
	}
	te := findKey(d, "type")
	typ := ""
	if te != nil {
		typ = deref(te).Value
	}
	switch {
	case typ == "import" || te == nil && findKey(d, "import_path") != nil:
		(compatKeys{p}).importTool(c, ip, l)
	case typ == "import_tools":
		if !(compatKeys{p}).enabled(d, ip) {
			return true
		}
		if t := findKey(d, "tools"); t != nil {
			for i, c := range p.list(t, ip+".tools") {
				(compatKeys{p}).importTool(c, index(ip+".tools", i), l)
			}
		}
	case typ == "custom":
		(compatKeys{p}).importTool(c, ip, l)
		if n := len(l.python); n > 0 && l.python[n-1].path == ip {
			l.python[n-1].set = true
		}
	default:
		return false
	}
	return true
}

// importTool reads one `{type: import, import_path, name, ...}` (type
// optional; or `{type: custom, import_path}`) and records it unless it is
// disabled.
func (o compatKeys) importTool(c *yaml.Node, ip string, l *toolsetList) {
	p := o.p
	d := deref(c)
	if d.Kind != yaml.MappingNode {
		p.add(c.Line, ip, "expected a mapping with import_path, got %s", describe(d))
		return
	}
	if !(compatKeys{p}).enabled(d, ip) {
		return
	}
	e := findKey(d, "import_path")
	if e == nil {
		p.add(c.Line, ip, "missing required field \"import_path\" (the Python code of the tool)")
		return
	}
	ref := p.requiredStr(e, ip+".import_path")
	if ref == "" {
		return
	}
	name := funcName(ref)
	if ne := findKey(d, "name"); ne != nil && !isNull(ne) {
		name = p.str(ne, ip+".name")
	}
	l.python = append(l.python, pythonTool{line: e.Line, path: ip, name: name, ref: ref})
}

// enabled reads a mapping's `enabled` (default true).
func (o compatKeys) enabled(d *yaml.Node, path string) bool {
	p := o.p
	e := findKey(d, "enabled")
	return e == nil || p.boolean(e, path+".enabled", true)
}

// funcName is the name AgentPool gives a tool imported from ref: the
// function's own ("webbrowser.open" and "webbrowser:open" are "open").
func funcName(ref string) string {
	return ref[strings.LastIndexAny(ref, ".:/")+1:]
}

// warnPython warns about each Python tool of an agent, and once more when
// the agent has nothing else to call (no toolset, worker or MCP server).
func (o compatKeys) warnPython(a *Agent, l *toolsetList, hasMCP bool, path string) {
	p := o.p
	for _, t := range l.python {
		what := fmt.Sprintf("tool %q is the Python function %s", t.name, t.ref)
		if t.set {
			what = fmt.Sprintf("toolset %s is a Python class", t.ref)
		}
		p.warn(t.line, t.path, "skipped: %s, which agentpool cannot load or run; agent %q runs without it", what, a.Name)
	}
	if len(l.python) > 0 && len(l.out) == 0 && len(a.Workers) == 0 && !hasMCP {
		t := l.python[0]
		key := t.path // agents.NAME.tools[i]...: report at agents.NAME.tools
		if i := strings.Index(t.path[len(path):], "["); i >= 0 {
			key = t.path[:len(path)+i]
		}
		p.warn(t.line, key, "agent %q has no tools left (each was Python code): it answers from its model alone; give it a toolset or an MCP server that does the job", a.Name)
	}
}

// compatKeys reads the keys that AgentPool's relatives write and that map
// onto agentpool's own, or are skipped with a warning: llmling-agent's
// older agent keys, tools given as Python code, the client-side tools of
// an AG-UI agent, the input model's keys. It is the parser's, kept apart
// so that the parser's own surface (one method per manifest key) does not
// also carry the compatibility readers.
type compatKeys struct{ p *parser }
