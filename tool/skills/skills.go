// Package skills is the skills toolset: Claude-style skills (a folder with
// a SKILL.md whose YAML front matter has a name and a description, and
// whose body holds the instructions), offered to a model on demand, as
// Claude Code and AgentPool do. The model sees the catalog (names and
// descriptions) in the description of load_skill and loads a skill's
// instructions when a task calls for it; list_skills lists the catalog.
//
// Skills are found in the directories given, in order; the first skill of
// a name wins. They are read when the toolset is made (catalog) and when
// a skill is loaded (instructions, read again each time, so that editing a
// SKILL.md takes effect without a restart). A SKILL.md is read within
// bounded.Config: at most 1 MiB, a regular file, its front matter bounded
// in nesting, nodes and alias expansion before it is decoded.
package skills

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/agentpool/agentpool/internal/bounded"
	"github.com/agentpool/agentpool/tool"
)

// Tool names.
const (
	LoadSkill  = "load_skill"
	ListSkills = "list_skills"
)

// Limits of the front matter, as Claude Code sets them.
const (
	MaxNameLen        = 64
	MaxDescriptionLen = 1024
)

// Skill is one skill.
type Skill struct {
	Name        string
	Description string
	Dir         string // the skill's folder
}

// Discover reads the skills of dirs (each a directory of skill folders),
// in order; a name found again later is skipped. A directory that does not
// exist is skipped; a SKILL.md that cannot be read or has no valid front
// matter is reported in errs and skipped.
func Discover(dirs []string) (found []Skill, errs []error) {
	seen := map[string]bool{}
	for _, dir := range dirs {
		entries, err := os.ReadDir(dir)
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, err)
			}
			continue
		}
		for _, e := range entries {
			sub := filepath.Join(dir, e.Name())
			if st, err := os.Stat(sub); err != nil || !st.IsDir() {
				continue
			}
			file := filepath.Join(sub, "SKILL.md")
			data, err := readSkill(file)
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				errs = append(errs, err)
				continue
			}
			s, _, err := parse(data)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", file, err))
				continue
			}
			if seen[s.Name] {
				continue
			}
			seen[s.Name] = true
			s.Dir = sub
			found = append(found, s)
		}
	}
	return found, errs
}

// readSkill reads a SKILL.md within bounded.Config; an error names the
// file.
func readSkill(file string) ([]byte, error) {
	data, err := bounded.New(bounded.Config).ReadFile(file)
	var bound *bounded.Error
	if errors.As(err, &bound) {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return data, err
}

// parse splits a SKILL.md into its front matter and body.
func parse(data []byte) (Skill, string, error) {
	data = bytes.TrimPrefix(data, []byte("\ufeff"))
	text := strings.ReplaceAll(string(data), "\r\n", "\n")
	rest, ok := strings.CutPrefix(text, "---\n")
	if !ok {
		return Skill{}, "", errors.New("no YAML front matter (a first line \"---\")")
	}
	front, body, ok := strings.Cut(rest, "\n---")
	if !ok {
		return Skill{}, "", errors.New("front matter is not closed by \"---\"")
	}
	if i := strings.IndexByte(body, '\n'); i >= 0 {
		body = body[i+1:]
	} else {
		body = ""
	}
	var meta struct {
		Name        string `yaml:"name"`
		Description string `yaml:"description"`
	}
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(front), &doc); err != nil {
		return Skill{}, "", fmt.Errorf("invalid front matter: %w", err)
	}
	if err := bounded.New(bounded.Config).CheckYAML(&doc); err != nil {
		// Line 1 of the front matter is line 2 of the file.
		return Skill{}, "", fmt.Errorf("line %d: %w", err.(*bounded.Error).Line+1, err)
	}
	if err := doc.Decode(&meta); err != nil {
		return Skill{}, "", fmt.Errorf("invalid front matter: %w", err)
	}
	meta.Name, meta.Description = strings.TrimSpace(meta.Name), strings.TrimSpace(meta.Description)
	switch {
	case meta.Name == "":
		return Skill{}, "", errors.New("front matter has no name")
	case meta.Description == "":
		return Skill{}, "", errors.New("front matter has no description")
	case len(meta.Name) > MaxNameLen:
		return Skill{}, "", fmt.Errorf("name is longer than %d characters", MaxNameLen)
	case len(meta.Description) > MaxDescriptionLen:
		return Skill{}, "", fmt.Errorf("description is longer than %d characters", MaxDescriptionLen)
	}
	return Skill{Name: meta.Name, Description: meta.Description}, strings.TrimSpace(body), nil
}

// Toolset holds the skills one pool offers. It is immutable and safe for
// concurrent use.
type Toolset struct {
	skills []Skill
}

// New makes the toolset of skills (at most max of them when max > 0, in
// the order given).
func New(skills []Skill, max int) *Toolset {
	if max > 0 && len(skills) > max {
		skills = skills[:max]
	}
	return &Toolset{skills: append([]Skill(nil), skills...)}
}

// Skills returns the skills offered.
func (t *Toolset) Skills() []Skill { return append([]Skill(nil), t.skills...) }

// Instructions reads the instructions (the body of SKILL.md) of a skill.
func (t *Toolset) Instructions(name string) (Skill, string, error) {
	for _, s := range t.skills {
		if s.Name != name {
			continue
		}
		data, err := readSkill(filepath.Join(s.Dir, "SKILL.md"))
		if err != nil {
			return s, "", err
		}
		_, body, err := parse(data)
		return s, body, err
	}
	return Skill{}, "", fmt.Errorf("unknown skill %q; available skills: %s", name, t.names())
}

func (t *Toolset) names() string {
	if len(t.skills) == 0 {
		return "none"
	}
	names := make([]string, len(t.skills))
	for i, s := range t.skills {
		names[i] = s.Name
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// All returns the instructions of every skill, for a system prompt that
// holds them all (AgentPool's inject: all), each under its name.
func (t *Toolset) All() string {
	var b strings.Builder
	for _, s := range t.skills {
		_, body, err := t.Instructions(s.Name)
		if err != nil {
			continue
		}
		fmt.Fprintf(&b, "<skill_content name=%q>\n%s\n</skill_content>\n", s.Name, body)
	}
	return strings.TrimSpace(b.String())
}

type loadArgs struct {
	SkillName string `json:"skill_name" jsonschema:"description=Name of the skill to load (see the list in this tool's description)"`
}

// Tools returns load_skill and list_skills.
func (t *Toolset) Tools() []tool.Tool {
	var desc strings.Builder
	desc.WriteString("Load a skill: specialised instructions for a kind of task. Call it when a task matches a skill's description, then follow the instructions it returns.\n\nAvailable skills:")
	if len(t.skills) == 0 {
		desc.WriteString(" none")
	}
	for _, s := range t.skills {
		fmt.Fprintf(&desc, "\n- %s: %s", s.Name, s.Description)
	}
	load := tool.New(LoadSkill, desc.String(), func(_ context.Context, _ tool.Call, a loadArgs) (tool.Result, error) {
		s, body, err := t.Instructions(strings.TrimSpace(a.SkillName))
		if err != nil {
			return tool.Errorf("load_skill: %v", err), nil
		}
		return tool.Result{Content: fmt.Sprintf("# %s\n\n%s\n\nSkill directory: %s", s.Name, body, s.Dir)}, nil
	})
	list := tool.New(ListSkills, "List the available skills with their descriptions.", func(context.Context, tool.Call, struct{}) (tool.Result, error) {
		if len(t.skills) == 0 {
			return tool.Result{Content: "No skills available."}, nil
		}
		var b strings.Builder
		b.WriteString("Available skills:\n")
		for _, s := range t.skills {
			fmt.Fprintf(&b, "\n- %s: %s", s.Name, s.Description)
		}
		return tool.Result{Content: b.String()}, nil
	})
	return []tool.Tool{tool.WithKind(load, tool.KindRead), tool.WithKind(list, tool.KindRead)}
}
