// Skills: where Claude-style skill folders (a SKILL.md with front matter
// each) are found, as AgentPool's fork configures it (`skills:`).

package config

import (
	"go.yaml.in/yaml/v3"
)

// Skills is `skills:`. Set is true when the manifest has the key: then
// every agent gets the skills tools (load_skill, list_skills), as in
// AgentPool's fork; otherwise only agents that list the skills toolset,
// over the default folders.
type Skills struct {
	Set bool
	// Paths are searched first, in order (relative to the manifest).
	Paths []string
	// IncludeDefault adds .claude/skills in the workspace and
	// ~/.claude/skills after Paths (default true).
	IncludeDefault bool
	// InjectAll puts every skill's instructions in the system prompt
	// (instruction.inject: all); otherwise only the catalog (names and
	// descriptions) is offered, in the load_skill tool's description.
	InjectAll bool
	// MaxSkills bounds the skills offered (instruction.max_skills, 20).
	MaxSkills int
}

// DefaultMaxSkills is the default of skills.instruction.max_skills.
const DefaultMaxSkills = 20

// DefaultSkills is the skills configuration of a manifest without
// `skills:`.
func DefaultSkills() Skills {
	return Skills{IncludeDefault: true, MaxSkills: DefaultMaxSkills}
}

// skills reads `skills:`: a list of paths, or {paths, include_default,
// instruction: {inject, max_skills}}.
func (p *parser) skills(n *yaml.Node, path string) Skills {
	s := DefaultSkills()
	s.Set = true
	if d := deref(n); d != nil && d.Kind == yaml.SequenceNode {
		s.Paths = p.settings(n, path)
		return s
	}
	f, ok := p.object(n, path, []string{"paths", "include_default", "instruction"})
	if !ok {
		return s
	}
	if e, ok := f["paths"]; ok {
		s.Paths = p.settings(e.val, path+".paths")
	}
	if e, ok := f["include_default"]; ok {
		s.IncludeDefault = p.boolean(e.val, path+".include_default", true)
	}
	if e, ok := f["instruction"]; ok {
		ip := path + ".instruction"
		inf, _ := p.object(e.val, ip, []string{"inject", "max_skills"})
		switch p.choice(inf, "inject", ip, "description", "all", "matcher") {
		case "all":
			s.InjectAll = true
		case "matcher":
			p.warn(inf["inject"].line(), ip+".inject", "matcher needs a Python function: the catalog is offered instead (description)")
		}
		if me, ok := inf["max_skills"]; ok {
			if v := p.count(me.val, ip+".max_skills"); v > 0 {
				s.MaxSkills = v
			}
		}
	}
	return s
}
