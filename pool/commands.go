package pool

import (
	"slices"
	"strings"
)

// Command is a slash command of the pool's project: a prompt template
// that a person runs by name with arguments ("/review main.go"), from
// `run`, an ACP editor or the OpenCode TUI. The CLI fills them from
// Claude Code's command files (.claude/commands/*.md, docs/claude-code.md).
type Command struct {
	Name        string
	Description string
	// Source says where it comes from ("project", "user", a plugin).
	Source string
	// Template is the prompt; $ARGUMENTS stands for the arguments.
	Template string
}

// Expand is the command's prompt for args: $ARGUMENTS replaced by them,
// or, when the template does not use it, the arguments after a blank line.
func (c Command) Expand(args string) string {
	args = strings.TrimSpace(args)
	switch {
	case strings.Contains(c.Template, "$ARGUMENTS"):
		return strings.ReplaceAll(c.Template, "$ARGUMENTS", args)
	case args == "":
		return c.Template
	}
	return c.Template + "\n\n" + args
}

// Commands returns the pool's slash commands (Options.Commands), by name.
func (p *Pool) Commands() []Command { return slices.Clone(p.commands) }

// Command returns the slash command of that name.
func (p *Pool) Command(name string) (Command, bool) {
	for _, c := range p.commands {
		if c.Name == name {
			return c, true
		}
	}
	return Command{}, false
}

// ExpandCommand turns a prompt that begins with "/name" into that
// command's prompt (ok false, prompt unchanged, when it names none).
func (p *Pool) ExpandCommand(prompt string) (string, bool) {
	name, args, ok := SplitCommand(prompt)
	if !ok {
		return prompt, false
	}
	c, ok := p.Command(name)
	if !ok {
		return prompt, false
	}
	return c.Expand(args), true
}

// SplitCommand splits "/name args" into name and args; ok is false when s
// does not begin with a slash and a name.
func SplitCommand(s string) (name, args string, ok bool) {
	rest, found := strings.CutPrefix(s, "/")
	if !found {
		return "", "", false
	}
	name, args, _ = strings.Cut(rest, " ")
	name = strings.TrimSpace(name)
	return name, strings.TrimSpace(args), name != "" && !strings.Contains(name, "/")
}

// uniqueCommands keeps the last command of each name, sorted by name.
func uniqueCommands(cs []Command) []Command {
	byName := map[string]Command{}
	for _, c := range cs {
		byName[c.Name] = c
	}
	out := make([]Command, 0, len(byName))
	for _, c := range byName {
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b Command) int { return strings.Compare(a.Name, b.Name) })
	return out
}
