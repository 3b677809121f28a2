// System prompts in AgentPool's forms: strings, lists of strings and
// prompt entries (static text, a file, a reference into the manifest's
// prompt library), and the library itself (`prompts.system_prompts`).

package config

import (
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"
)

// promptCategories are AgentPool's system prompt categories.
var promptCategories = []string{"role", "methodology", "quality", "task"}

// promptLibrary reads `prompts:`: system_prompts (name -> {content,
// category, type: static}) become the library that system_prompt entries
// of type library name. A combination template is ignored (agentpool
// joins the prompts of an agent in order); prompt hubs are not supported.
func (p *parser) promptLibrary(n *yaml.Node, path string) {
	f, _ := p.object(n, path, []string{"system_prompts", "template", "providers"})
	p.prompts = map[string]string{}
	if e, ok := f["system_prompts"]; ok {
		sp := path + ".system_prompts"
		if d := deref(e.val); !isNull(d) && d.Kind != yaml.MappingNode {
			p.add(e.val.Line, sp, "expected a mapping of prompt names to prompts, got %s", describe(d))
		}
		for _, pe := range p.entries(e.val, sp) {
			pp := join(sp, pe.key)
			if d := deref(pe.val); d.Kind == yaml.ScalarNode && !isNull(d) {
				p.prompts[pe.key] = d.Value // shorthand: the content
				continue
			}
			pf, ok := p.object(pe.val, pp, []string{"content", "category", "type"})
			if !ok {
				continue
			}
			ce, ok := pf["content"]
			if !ok {
				p.add(pe.line(), pp, "missing required field \"content\"")
				continue
			}
			p.prompts[pe.key] = p.str(ce.val, pp+".content")
			if te, ok := pf["category"]; ok {
				if c, ok := p.word(te.val, pp+".category"); ok && !contains(promptCategories, c) {
					p.add(te.val.Line, pp+".category", "unknown prompt category %q%s", c, orKnown(c, promptCategories))
				}
			}
			if te, ok := pf["type"]; ok {
				if t, ok := p.word(te.val, pp+".type"); ok && t != "static" {
					p.add(te.val.Line, pp+".type", "library prompts are static text, got type %q", t)
				}
			}
		}
	}
	if e, ok := f["template"]; ok && !isNull(e.val) {
		p.str(e.val, path+".template")
		p.warn(e.line(), path+".template", "ignored: agentpool joins an agent's prompts in order (a Jinja template is not rendered)")
	}
	if e, ok := f["providers"]; ok && !empty(e.val) {
		p.add(e.line(), path+".providers", "prompt hubs (Langfuse, PromptLayer, ...) are not supported: put the prompts under prompts.system_prompts")
	}
}

// systemPrompt reads `system_prompt`: a string, or a list whose items are
// strings or AgentPool prompt entries ({type: static, content},
// {type: file, path}, {type: library, reference}); the parts are joined
// with "\n\n".
func (p *parser) systemPrompt(n *yaml.Node, path string) string {
	d := deref(n)
	if d == nil || d.Kind != yaml.SequenceNode {
		if d != nil && d.Kind == yaml.MappingNode {
			return p.promptEntry(n, path)
		}
		return p.str(n, path)
	}
	parts := make([]string, 0, len(d.Content))
	for i, c := range d.Content {
		ip := index(path, i)
		switch dc := deref(c); {
		case dc.Kind == yaml.MappingNode:
			if s := p.promptEntry(c, ip); s != "" {
				parts = append(parts, s)
			}
		case dc.Kind != yaml.ScalarNode || isNull(dc):
			p.add(c.Line, ip, "expected a string or a prompt entry ({type: library, reference: NAME}, ...), got %s", describe(dc))
		default:
			parts = append(parts, p.str(c, ip))
		}
	}
	return strings.Join(parts, "\n\n")
}

// promptEntry reads one AgentPool prompt entry.
func (p *parser) promptEntry(n *yaml.Node, path string) string {
	f, ok := p.object(n, path, []string{"type", "content", "category", "path", "variables", "reference", "function", "arguments"})
	if !ok {
		return ""
	}
	typ := "static"
	if e, ok := f["type"]; ok {
		if typ, ok = p.word(e.val, path+".type"); !ok {
			return ""
		}
	}
	str := func(key string) (string, bool) {
		e, ok := f[key]
		if !ok {
			p.add(n.Line, path, "missing required field %q (a %s prompt)", key, typ)
			return "", false
		}
		s := p.requiredStr(e.val, join(path, key))
		return s, s != ""
	}
	switch typ {
	case "static":
		s, _ := str("content")
		return s
	case "library":
		ref, ok := str("reference")
		if !ok {
			return ""
		}
		text, found := p.prompts[ref]
		if !found {
			names := make([]string, 0, len(p.prompts))
			for k := range p.prompts {
				names = append(names, k)
			}
			p.add(f["reference"].val.Line, path+".reference", "unknown library prompt %q%s (define it under prompts.system_prompts)", ref, suggest(ref, names))
		}
		return text
	case "file":
		rel, ok := str("path")
		if !ok {
			return ""
		}
		if e, ok := f["variables"]; ok && !empty(e.val) {
			p.warn(e.line(), path+".variables", "ignored: the file is used as written (agentpool renders no Jinja templates)")
		}
		file := rel
		if !filepath.IsAbs(file) {
			file = filepath.Join(filepath.Dir(p.file), file)
		}
		data, err := p.budget.ReadFile(file)
		if err != nil {
			p.add(f["path"].val.Line, path+".path", "cannot read prompt file %s: %v", rel, p.readProblem(err))
			return ""
		}
		return strings.TrimSpace(string(data))
	case "function":
		at := n
		if e, ok := f["function"]; ok {
			at = e.val
		}
		p.python(at.Line, path, "prompt function %s is a Python import path", describe(at))
		return ""
	}
	p.add(f["type"].val.Line, path+".type", "unknown prompt type %q (static, file, library or function)", typ)
	return ""
}
