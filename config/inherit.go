// Inheritance: AgentPool's `INHERIT:` (a manifest built on other manifest
// files) and `inherits:` (an agent built on another agent).

package config

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// fileLineBase: the nodes read from the k-th file merged by INHERIT carry
// line + k*fileLineBase, so that an issue found in them names that file
// and its own line (parser.add decodes it). No manifest has 16M lines.
const fileLineBase = 1 << 24

// inherit resolves the `INHERIT:` key of root: each file it names (a path
// or a list of paths, relative to dir) is loaded, its own INHERIT
// resolved, and the files are merged in order, then root over them.
// Mappings merge key by key (root wins), lists are concatenated without
// repeating an equal item, anything else is replaced. chain holds the
// files being resolved, to report cycles.
func (p *parser) inherit(root *yaml.Node, dir string, chain []string) *yaml.Node {
	d := deref(root)
	if d == nil || d.Kind != yaml.MappingNode {
		return root
	}
	var ref *yaml.Node
	rest := &yaml.Node{Kind: yaml.MappingNode, Tag: d.Tag, Line: d.Line, Column: d.Column}
	for i := 0; i+1 < len(d.Content); i += 2 {
		if k := deref(d.Content[i]); k != nil && k.Value == "INHERIT" {
			ref = d.Content[i+1]
			continue
		}
		rest.Content = append(rest.Content, d.Content[i], d.Content[i+1])
	}
	if ref == nil {
		return root
	}
	var paths []*yaml.Node
	switch r := deref(ref); {
	case isNull(r):
	case r.Kind == yaml.SequenceNode:
		paths = r.Content
	default:
		paths = []*yaml.Node{ref}
	}
	var base *yaml.Node
	for i, pn := range paths {
		if p.refused {
			break // a bound was hit: one issue says so, not one per entry left
		}
		path := "INHERIT"
		if deref(ref).Kind == yaml.SequenceNode {
			path = index(path, i)
		}
		parent := p.inheritFile(pn, path, dir, chain)
		if parent == nil {
			continue
		}
		if base == nil {
			base = parent
		} else {
			base = mergeNodes(base, parent)
		}
	}
	if base == nil {
		return rest
	}
	return mergeNodes(base, rest)
}

// inheritFile loads one file named by INHERIT, with its lines marked (see
// fileLineBase) and its own INHERIT resolved; nil after reporting a
// problem.
func (p *parser) inheritFile(n *yaml.Node, path, dir string, chain []string) *yaml.Node {
	rel, ok := p.word(n, path)
	if !ok {
		return nil
	}
	if strings.Contains(rel, "://") {
		p.add(n.Line, path, "remote INHERIT %q is not supported: agentpool reads manifests from local files only", rel)
		return nil
	}
	file := rel
	if !filepath.IsAbs(file) {
		file = filepath.Join(dir, file)
	}
	abs, err := filepath.Abs(file)
	if err != nil {
		abs = file
	}
	if slices.Contains(chain, abs) {
		p.add(n.Line, path, "INHERIT cycle: %s includes itself", rel)
		return nil
	}
	data, err := p.budget.ReadFile(file)
	if err != nil {
		p.add(n.Line, path, "cannot read %s: %v", rel, p.readProblem(err))
		return nil
	}
	var doc yaml.Node
	if err := yaml.NewDecoder(strings.NewReader(string(data))).Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil // an empty file adds nothing
		}
		p.add(n.Line, path, "%s: invalid YAML: %s", rel, strings.TrimPrefix(err.Error(), "yaml: "))
		return nil
	}
	p.inherited = append(p.inherited, file)
	markLines(&doc, len(p.inherited)*fileLineBase, map[*yaml.Node]bool{})
	if err := p.budget.CheckYAML(&doc); err != nil {
		p.bound(err)
		return nil
	}
	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) > 0 {
		root = root.Content[0]
	}
	if d := deref(root); d.Kind != yaml.MappingNode {
		p.add(n.Line, path, "%s: expected a mapping, got %s", rel, describe(d))
		return nil
	}
	return p.inherit(root, filepath.Dir(file), append(chain, abs))
}

// markLines adds off to the line of every node of the tree once.
func markLines(n *yaml.Node, off int, seen map[*yaml.Node]bool) {
	if n == nil || seen[n] {
		return
	}
	seen[n] = true
	n.Line += off
	for _, c := range n.Content {
		markLines(c, off, seen)
	}
	markLines(n.Alias, off, seen)
}

// mergeNodes merges over onto base (see inherit). Neither is modified.
func mergeNodes(base, over *yaml.Node) *yaml.Node {
	b, o := deref(base), deref(over)
	switch {
	case b == nil || o == nil || b.Kind != o.Kind:
		return over
	case o.Kind == yaml.SequenceNode:
		out := &yaml.Node{Kind: yaml.SequenceNode, Tag: o.Tag, Line: o.Line, Column: o.Column, Style: o.Style}
		out.Content = append(out.Content, b.Content...)
		inBase := make(map[string]bool, len(b.Content))
		for _, c := range b.Content {
			if k, ok := valueKey(c); ok {
				inBase[k] = true
			}
		}
		for _, c := range o.Content {
			if k, ok := valueKey(c); !ok || !inBase[k] {
				out.Content = append(out.Content, c)
			}
		}
		return out
	case o.Kind != yaml.MappingNode:
		return over
	}
	out := &yaml.Node{Kind: yaml.MappingNode, Tag: o.Tag, Line: o.Line, Column: o.Column, Style: o.Style}
	at := map[string]int{}
	for i := 0; i+1 < len(b.Content); i += 2 {
		if k := deref(b.Content[i]); k != nil && k.ShortTag() != "!!merge" {
			at[k.Value] = len(out.Content)
		}
		out.Content = append(out.Content, b.Content[i], b.Content[i+1])
	}
	for i := 0; i+1 < len(o.Content); i += 2 {
		k := deref(o.Content[i])
		if j, ok := at[k.Value]; ok && k.ShortTag() != "!!merge" {
			out.Content[j], out.Content[j+1] = o.Content[i], mergeNodes(out.Content[j+1], o.Content[i+1])
			continue
		}
		out.Content = append(out.Content, o.Content[i], o.Content[i+1])
	}
	return out
}

// valueKey is a text two nodes share exactly when they decode to equal
// values (reflect.DeepEqual of their Go values, types included), so that a
// merge finds the repeated items of two lists with one look-up each
// instead of comparing every pair; ok is false for a node that does not
// decode, which equals nothing.
func valueKey(n *yaml.Node) (key string, ok bool) {
	var v any
	if deref(n).Decode(&v) != nil {
		return "", false
	}
	var b strings.Builder
	writeValueKey(&b, v)
	return b.String(), true
}

func writeValueKey(b *strings.Builder, v any) {
	switch x := v.(type) {
	case []any:
		b.WriteByte('[')
		for _, e := range x {
			writeValueKey(b, e)
			b.WriteByte(',')
		}
		b.WriteByte(']')
	case map[string]any:
		b.WriteByte('{')
		for _, k := range slices.Sorted(maps.Keys(x)) {
			fmt.Fprintf(b, "%q:", k)
			writeValueKey(b, x[k])
			b.WriteByte(',')
		}
		b.WriteByte('}')
	case map[any]any:
		// Keys of other types than strings: in the order of their own keys.
		keys := make(map[string]any, len(x))
		for k := range x {
			var kb strings.Builder
			writeValueKey(&kb, k)
			keys[kb.String()] = k
		}
		b.WriteByte('{')
		for _, k := range slices.Sorted(maps.Keys(keys)) {
			b.WriteString(k)
			b.WriteByte(':')
			writeValueKey(b, x[keys[k]])
			b.WriteByte(',')
		}
		b.WriteByte('}')
	default:
		fmt.Fprintf(b, "%T:%#v", x, x)
	}
}

// agentSource is one entry of `agents:` with its known fields.
type agentSource struct {
	e  entry
	f  map[string]entry
	ok bool // a mapping
	// external is the type of an external agent (acp, claude_code), read
	// by parser.external; "" for a native agent.
	external string
}

// inheritFields returns the fields of agent name with those of the agent
// it `inherits:` from (recursively) under them: the child's own keys win,
// as in AgentPool, where a child replaces each key it sets.
func (p *parser) inheritFields(name string, srcs map[string]*agentSource, names []string, chain []string) map[string]entry {
	src := srcs[name]
	ie, has := src.f["inherits"]
	if !has {
		return src.f
	}
	path := "agents." + name + ".inherits"
	parent, ok := p.word(ie.val, path)
	if !ok {
		return src.f
	}
	ps := srcs[parent]
	switch {
	case ps == nil:
		p.add(ie.val.Line, path, "unknown agent %q to inherit from%s", parent, suggest(parent, names))
		return src.f
	case parent == name || slices.Contains(chain, parent):
		cycle := append(append(slices.Clone(chain), name), parent)
		if i := slices.Index(cycle, parent); i > 0 {
			cycle = cycle[i:]
		}
		p.add(ie.val.Line, path, "inheritance cycle: %s", strings.Join(cycle, " -> "))
		return src.f
	case !ps.ok:
		return src.f
	}
	pf := p.inheritFields(parent, srcs, names, append(chain, name))
	out := make(map[string]entry, len(pf)+len(src.f))
	for k, v := range pf {
		if k != "inherits" {
			out[k] = v
		}
	}
	for k, v := range src.f {
		out[k] = v
	}
	return out
}

// lineRef formats a line for "first defined at ..." texts: the line, or
// file:line for a line of an INHERIT file.
func (p *parser) lineRef(line int) string {
	if k := line / fileLineBase; k > 0 && k <= len(p.inherited) {
		return fmt.Sprintf("%s:%d", p.inherited[k-1], line%fileLineBase)
	}
	return fmt.Sprintf("%d", line)
}

// plainLines removes the file mark (fileLineBase) from the lines kept in
// m, once every issue has been reported: a Line is the line in the file
// that declared the entry, an INHERIT file for entries from one.
func plainLines(m *Manifest) {
	fix := func(l *int) { *l %= fileLineBase }
	var model func(ms *ModelSpec)
	model = func(ms *ModelSpec) {
		fix(&ms.Line)
		for i := range ms.Fallback {
			model(&ms.Fallback[i])
		}
	}
	conns := func(cs []Connection) {
		for i := range cs {
			fix(&cs[i].Line)
		}
	}
	mcp := func(ss []MCPServer) {
		for i := range ss {
			fix(&ss[i].Line)
		}
	}
	model(&m.DefaultModel)
	mcp(m.MCPServers)
	for _, a := range m.Agents {
		fix(&a.Line)
		model(&a.Model)
		for i := range a.Toolsets {
			fix(&a.Toolsets[i].Line)
		}
		for i := range a.Workers {
			fix(&a.Workers[i].Line)
		}
		mcp(a.MCPServers)
		conns(a.Connections)
		if a.Output != nil {
			fix(&a.Output.Line)
		}
	}
	for _, t := range m.Teams {
		fix(&t.Line)
		conns(t.Connections)
	}
}
