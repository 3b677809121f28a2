package settingsrules

import (
	"encoding/json"
	"fmt"
	"strings"
)

// The lists of permissions, in the order they are consulted.
const (
	Deny  = "deny"
	Ask   = "ask"
	Allow = "allow"
)

var lists = []string{Deny, Ask, Allow}

// Rule is one permission rule read from a settings file.
type Rule struct {
	List string // Deny, Ask or Allow
	Text string // as written: "Write", "Bash(npm run:*)"
	File string // the settings file it was read from

	tool   string // the tool it names (Claude Code's name)
	prefix string // Bash(prefix:*): the command prefix; "" for the whole tool
}

// parseRule reads the rule text; why says what is not supported.
func parseRule(text string) (tool, prefix, why string) {
	t := strings.TrimSpace(text)
	name, spec, hasSpec := strings.Cut(t, "(")
	switch {
	case t == "":
		return "", "", "an empty rule"
	case !hasSpec:
		if strings.ContainsAny(t, " )*") && !isMCPWildcard(t) {
			return "", "", "not a tool name"
		}
		return t, "", ""
	case name == "" || !strings.HasSuffix(spec, ")"):
		return "", "", "not a tool name or Tool(specifier)"
	}
	spec = strings.TrimSuffix(spec, ")")
	switch {
	case spec == "*":
		return name, "", ""
	case name == "Bash" && strings.HasSuffix(spec, ":*") && !strings.Contains(strings.TrimSuffix(spec, ":*"), "*") && strings.TrimSpace(strings.TrimSuffix(spec, ":*")) != "":
		return name, strings.TrimSpace(strings.TrimSuffix(spec, ":*")), ""
	}
	return "", "", "only Tool, Tool(*) and Bash(prefix:*) rules are applied"
}

func isMCPWildcard(t string) bool {
	return strings.HasPrefix(t, "mcp__") && strings.HasSuffix(t, "__*") && strings.Count(t, "*") == 1
}

// claudeNames are the names Claude Code gives agentpool's tools where
// they differ (the builtin tools already carry Claude Code's names).
var claudeNames = map[string][]string{"task": {"Task", "Agent"}}

// namesTool reports whether the rule's tool is the tool of a request.
func (r Rule) namesTool(tool string) bool {
	switch {
	case r.tool == tool:
		return true
	case isMCPWildcard(r.tool):
		return strings.HasPrefix(tool, strings.TrimSuffix(r.tool, "*"))
	case strings.HasPrefix(r.tool, "mcp__") && strings.Count(r.tool, "__") == 1:
		return strings.HasPrefix(tool, r.tool+"__") // mcp__server: all its tools
	}
	for _, n := range claudeNames[tool] {
		if r.tool == n {
			return true
		}
	}
	return false
}

// matches reports whether the rule covers a call of tool with input.
func (r Rule) matches(tool string, input json.RawMessage) bool {
	if !r.namesTool(tool) {
		return false
	}
	if r.prefix == "" {
		return true
	}
	var in struct {
		Command string `json:"command"`
	}
	if json.Unmarshal(input, &in) != nil || strings.TrimSpace(in.Command) == "" {
		return false
	}
	if r.List == Allow {
		// An allowed prefix must not let another command ride along.
		return !strings.ContainsAny(in.Command, shellOperators) && hasWordPrefix(in.Command, r.prefix)
	}
	for _, part := range strings.FieldsFunc(in.Command, func(c rune) bool { return strings.ContainsRune(shellOperators+"(", c) }) {
		if hasWordPrefix(part, r.prefix) {
			return true
		}
	}
	return false
}

// shellOperators separate or nest commands: an allow prefix rule never
// covers a command holding one.
const shellOperators = ";&|<>`$\n\r"

// hasWordPrefix reports whether cmd starts with prefix followed by the
// end or a space ("npm" covers "npm test", not "npmx").
func hasWordPrefix(cmd, prefix string) bool {
	cmd = strings.TrimLeft(cmd, " \t")
	rest, ok := strings.CutPrefix(cmd, prefix)
	return ok && (rest == "" || rest[0] == ' ' || rest[0] == '\t')
}

// describe says where the rule is, for messages.
func (r Rule) describe() string {
	return fmt.Sprintf("the rule %q in permissions.%s of %s", r.Text, r.List, r.File)
}

// ruleText is the tool-wide rule Save writes for tool, in Claude Code's
// vocabulary.
func ruleText(tool string) string {
	if n, ok := claudeNames[tool]; ok {
		return n[0]
	}
	return tool
}
