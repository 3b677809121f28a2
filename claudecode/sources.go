package claudecode

import (
	"fmt"
	"strings"
)

// Settings scopes, as Claude Code names them (--setting-sources).
const (
	ScopeUser    = "user"
	ScopeProject = "project"
	ScopeLocal   = "local"
	// ScopePlugin marks what a plugin brought; ScopeManifest what the
	// manifest names (hooks.settings, file_agents).
	ScopePlugin   = "plugin"
	ScopeManifest = "manifest"
)

// Sources choose the settings files read: Claude Code's
// --setting-sources.
type Sources struct{ User, Project, Local bool }

// AllSources is the default: every settings file.
func AllSources() Sources { return Sources{User: true, Project: true, Local: true} }

// ParseSources reads a comma-separated list of user, project and local;
// "" is none.
func ParseSources(s string) (Sources, error) {
	var out Sources
	for _, part := range strings.Split(s, ",") {
		switch strings.TrimSpace(part) {
		case "":
		case ScopeUser:
			out.User = true
		case ScopeProject:
			out.Project = true
		case ScopeLocal:
			out.Local = true
		default:
			return Sources{}, fmt.Errorf("--setting-sources: unknown source %q (known: user, project, local)", strings.TrimSpace(part))
		}
	}
	return out, nil
}

func (s Sources) has(scope string) bool {
	switch scope {
	case ScopeUser:
		return s.User
	case ScopeProject:
		return s.Project
	case ScopeLocal:
		return s.Local
	}
	return false
}

// String lists the sources as ParseSources reads them.
func (s Sources) String() string {
	var parts []string
	for _, sc := range []string{ScopeUser, ScopeProject, ScopeLocal} {
		if s.has(sc) {
			parts = append(parts, sc)
		}
	}
	return strings.Join(parts, ",")
}
