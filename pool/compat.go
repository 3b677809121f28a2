package pool

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/tool"
	"github.com/agentpool/agentpool/tool/skills"
)

// builtinTools returns the tools of an agent's builtin toolsets, without
// those it turned off (AgentSpec.Disabled); its file and shell tools act
// in dir ("": the workspace).
func (p *Pool) builtinTools(a AgentSpec, dir string) ([]tool.Tool, error) {
	var out []tool.Tool
	for _, typ := range a.Builtin {
		got, err := p.builtins.tools(a, typ, dir)
		if err != nil {
			return nil, agentErr(a.Name, "Builtin", "%v", err)
		}
		out = append(out, got...)
	}
	if len(a.Disabled) == 0 {
		return out, nil
	}
	names := make([]string, len(out))
	for i, t := range out {
		names[i] = t.Info().Name
	}
	for _, d := range a.Disabled {
		if !slices.Contains(names, d) {
			return nil, agentErr(a.Name, "Disabled", "no builtin tool %q to turn off (its toolsets have: %s)", d, strings.Join(names, ", "))
		}
	}
	return slices.DeleteFunc(out, func(t tool.Tool) bool { return slices.Contains(a.Disabled, t.Info().Name) }), nil
}

// systemPrompt is an agent's system prompt, with every skill's
// instructions after it when the skills are injected (inject: all) and the
// agent has the skills toolset.
func (p *Pool) systemPrompt(a AgentSpec) string {
	if !p.builtins.skillsConfig().InjectAll || !slices.Contains(a.Builtin, config.ToolsetSkills) {
		return a.SystemPrompt
	}
	all := p.builtins.skillsToolset().All()
	if all == "" {
		return a.SystemPrompt
	}
	if a.SystemPrompt == "" {
		return all
	}
	return a.SystemPrompt + "\n\n" + all
}

// skillsConfig is the skills configuration, the default when unset.
func (b *builtins) skillsConfig() config.Skills {
	c := b.skillsCfg
	if c.MaxSkills == 0 && !c.Set && len(c.Paths) == 0 && !c.IncludeDefault {
		c = config.DefaultSkills()
	}
	return c
}

// skillsToolset finds the skills (once): the configured paths, then
// .claude/skills in the workspace and ~/.claude/skills. A SKILL.md that
// cannot be read is left out, with a warning in the log.
func (b *builtins) skillsToolset() *skills.Toolset {
	b.skillsOnce.Do(func() {
		c := b.skillsConfig()
		dirs := slices.Clone(c.Paths)
		if c.IncludeDefault {
			dirs = append(dirs, filepath.Join(b.ws.Root(), ".claude", "skills"))
			if home, err := os.UserHomeDir(); err == nil {
				dirs = append(dirs, filepath.Join(home, ".claude", "skills"))
			}
		}
		found, errs := skills.Discover(dirs)
		for _, err := range errs {
			b.log.Warn("skill left out", "err", err)
		}
		b.skills = skills.New(found, c.MaxSkills)
	})
	return b.skills
}

// validateCompat checks what the AgentPool features of cfg name: the
// targets of connections.
func (cfg *Config) validateCompat(kinds map[string]string, unknown func(string) string) []error {
	var errs []error
	for _, a := range cfg.Agents {
		for i, c := range a.Connections {
			if kinds[c.Target] == "" {
				errs = append(errs, agentErr(a.Name, fmt.Sprintf("Connections[%d]", i), "%s", unknown(c.Target)))
			}
		}
	}
	for _, t := range cfg.Teams {
		for i, c := range t.Connections {
			if kinds[c.Target] == "" {
				errs = append(errs, teamErr(t.Name, fmt.Sprintf("Connections[%d]", i), "%s", unknown(c.Target)))
			}
		}
	}
	return errs
}
