package settingsrules

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/agentpool/agentpool/approval"
	"github.com/agentpool/agentpool/internal/bounded"
)

// Files are the settings files of a project, from the lowest precedence
// to the highest (Claude Code's user, project and local settings). An
// empty path is skipped.
type Files struct {
	User    string // ~/.claude/settings.json
	Project string // DIR/.claude/settings.json
	Local   string // DIR/.claude/settings.local.json: where Save writes
	// SkipLocal leaves the rules of Local unread (--setting-sources
	// without local); Save still writes there.
	SkipLocal bool
}

// ForProject returns the settings files of the project in dir, with the
// user's file under the home directory (none when it is unknown).
func ForProject(dir string) Files {
	f := Files{
		Project: filepath.Join(dir, ".claude", "settings.json"),
		Local:   filepath.Join(dir, ".claude", "settings.local.json"),
	}
	if home, err := os.UserHomeDir(); err == nil && home != "" {
		f.User = filepath.Join(home, ".claude", "settings.json")
	}
	return f
}

// Store holds the rules of a project's settings files. It implements
// approval.RuleStore.
type Store struct {
	local    string
	warnings []string

	mu    sync.Mutex
	rules []Rule // in the order read; Save appends
}

var _ approval.RuleStore = (*Store)(nil)

// Load reads the rules of the files that exist. The error names every
// file that cannot be read or is not the shape Claude Code reads.
func Load(f Files) (*Store, error) {
	s := &Store{local: f.Local}
	budget := bounded.New(bounded.Config)
	var errs []error
	read := []string{f.User, f.Project, f.Local}
	if f.SkipLocal {
		read = read[:2]
	}
	for _, path := range read {
		if path == "" {
			continue
		}
		data, err := readFile(budget, path)
		if err == nil {
			err = s.add(path, data)
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return s, nil
}

// add reads the rules of one file.
func (s *Store) add(path string, data []byte) error {
	perms, err := parsePermissions(path, data)
	if err != nil {
		return err
	}
	for _, list := range lists {
		for _, text := range perms.list(list) {
			tool, prefix, why := parseRule(text)
			if why != "" {
				s.warnings = append(s.warnings, fmt.Sprintf("%s: permissions.%s: %q is not applied (%s)", path, list, text, why))
				continue
			}
			s.rules = append(s.rules, Rule{List: list, Text: text, File: path, tool: tool, prefix: prefix})
		}
	}
	return nil
}

// Rules returns the rules applied, deny first, then ask, then allow.
func (s *Store) Rules() []Rule {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := slices.Clone(s.rules)
	slices.SortStableFunc(out, func(a, b Rule) int { return slices.Index(lists, a.List) - slices.Index(lists, b.List) })
	return out
}

// Warnings lists the rules read but not applied, one line each.
func (s *Store) Warnings() []string { return slices.Clone(s.warnings) }

// LocalFile is the file Save writes.
func (s *Store) LocalFile() string { return s.local }

// Match implements approval.RuleStore: the first rule that covers req,
// deny first, then ask (which leaves req to a person), then allow.
func (s *Store) Match(req approval.Request) (approval.Answer, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, list := range lists {
		for _, r := range s.rules {
			if r.List != list || !r.matches(req.Tool, req.Input) {
				continue
			}
			switch list {
			case Deny:
				return approval.Answer{Reply: approval.RejectAlways, By: approval.ByRule, Message: "rejected by " + r.describe()}, true
			case Allow:
				return approval.Answer{Reply: approval.AllowAlways, By: approval.ByRule, Message: "allowed by " + r.describe()}, true
			}
			return approval.Answer{}, false // ask: a person decides
		}
	}
	return approval.Answer{}, false
}

// Save implements approval.RuleStore: an allow always adds the tool to
// permissions.allow of the local file, a reject always to
// permissions.deny, for every agent (Claude Code's meaning of a rule),
// and the rule applies from now on.
func (s *Store) Save(r approval.Rule) error {
	if s.local == "" {
		return fmt.Errorf("settingsrules: no local settings file to save the rule for %s in", r.Tool)
	}
	list := Allow
	if !r.Reply.Allows() {
		list = Deny
	}
	text := ruleText(r.Tool)
	s.mu.Lock()
	defer s.mu.Unlock()
	data, err := readFile(bounded.New(bounded.Config), s.local)
	if err != nil {
		return err
	}
	out, changed, err := addRule(s.local, data, list, text)
	if err != nil {
		return err
	}
	if changed {
		if err := writeAtomic(s.local, out); err != nil {
			return fmt.Errorf("settingsrules: saving %s: %w", s.local, err)
		}
	}
	tool, prefix, _ := parseRule(text)
	s.rules = append(s.rules, Rule{List: list, Text: text, File: s.local, tool: tool, prefix: prefix})
	return nil
}
