package claudecode

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/internal/bounded"
	"github.com/agentpool/agentpool/pool"
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

// PoolCommands are the commands as the pool offers them to every front
// end (pool.Options.Commands): a later scope wins on a name clash.
func (f *Found) PoolCommands() []pool.Command {
	out := make([]pool.Command, len(f.Commands))
	for i, c := range f.Commands {
		out[i] = pool.Command{Name: c.Name, Description: c.Description, Source: c.Scope, Template: c.Body}
	}
	return out
}
