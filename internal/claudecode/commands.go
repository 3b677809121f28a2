package claudecode

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/internal/bounded"
)

// Command is a Claude Code slash command: a markdown file whose body is a
// prompt, $ARGUMENTS standing for what follows the command's name.
type Command struct {
	Name        string // the file's name without .md
	Scope       string
	Path        string
	Description string
	Body        string
}

// readCommands reads the *.md files of dir; a later scope wins on a name
// clash (project over user over plugin), as in Claude Code.
func (f *Found) readCommands(budget *bounded.Budget, dir, scope string) error {
	files, err := mdFiles(dir)
	if err != nil {
		return err
	}
	var errs []error
	for _, path := range files {
		data, err := budget.ReadFile(path)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", path, err))
			continue
		}
		c := Command{Name: strings.TrimSuffix(filepath.Base(path), ".md"), Scope: scope, Path: path, Body: string(data)}
		if front, body, ok := config.SplitFrontMatter(data); ok {
			var meta struct {
				Description string `yaml:"description"`
			}
			if err := yaml.Unmarshal(front, &meta); err != nil {
				errs = append(errs, fmt.Errorf("%s: front matter: %v", path, err))
				continue
			}
			c.Description, c.Body = meta.Description, string(body)
		}
		c.Body = strings.TrimSpace(c.Body)
		f.Commands = append(f.Commands, c)
	}
	return errors.Join(errs...)
}

// Command returns the command of that name, the highest scope's.
func (f *Found) Command(name string) (Command, bool) {
	for i := len(f.Commands) - 1; i >= 0; i-- {
		if f.Commands[i].Name == name {
			return f.Commands[i], true
		}
	}
	return Command{}, false
}

// Expand turns a prompt "/name args" into the command's prompt, with
// $ARGUMENTS the args (appended after a blank line when the body does not
// use it); ok is false when the prompt names no command.
func (f *Found) Expand(prompt string) (string, bool) {
	if !strings.HasPrefix(prompt, "/") {
		return prompt, false
	}
	name, args, _ := strings.Cut(strings.TrimPrefix(prompt, "/"), " ")
	c, ok := f.Command(strings.TrimSpace(name))
	if !ok {
		return prompt, false
	}
	args = strings.TrimSpace(args)
	if strings.Contains(c.Body, "$ARGUMENTS") {
		return strings.ReplaceAll(c.Body, "$ARGUMENTS", args), true
	}
	if args == "" {
		return c.Body, true
	}
	return c.Body + "\n\n" + args, true
}
