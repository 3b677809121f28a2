package cli

import (
	"fmt"
	"strings"

	"github.com/agentpool/agentpool/config"
)

// nodeArgs splits the words of `run` into the node to run and the words of
// the prompt, AgentPool's `run AGENT PROMPT` beside agentpool's `run
// PROMPT`:
//
//   - with --agent (agent != ""), every word is the prompt, and the agent
//     must be one of the manifest's;
//   - a first word that names an agent or team of the manifest, followed
//     by at least one more word, is the node;
//   - exactly two words of which the first looks like a name (letters,
//     digits, "_", "-") are AgentPool's shape even when the manifest has
//     no such node: an error naming the nodes it has, never a run of the
//     default agent (or of the built-in demo) on "assistant Hello!";
//   - otherwise every word is the prompt of the default node ("" here).
//
// A prompt of two words whose first is not a node is written quoted, as
// one word (agentpool run "fix bugs"), or after --agent.
func nodeArgs(m *config.Manifest, source, agent string, args []string) (string, []string, error) {
	if agent != "" {
		if !hasNode(m, agent) {
			return "", nil, notInManifest(m, source, agent)
		}
		return agent, args, nil
	}
	if len(args) < 2 {
		return "", args, nil
	}
	switch first := args[0]; {
	case hasNode(m, first):
		return first, args[1:], nil
	case len(args) == 2 && isNodeName(first):
		return "", nil, fmt.Errorf("%w\n(to send both words as the prompt of the default agent, quote them: agentpool run %q)",
			notInManifest(m, source, first), strings.Join(args, " "))
	}
	return "", args, nil
}

// isNodeName reports the shape of agent and team names (config's rule):
// a letter, then letters, digits, "_" and "-".
func isNodeName(s string) bool {
	for i, r := range s {
		letter := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z'
		if !letter && (i == 0 || !(r >= '0' && r <= '9' || r == '_' || r == '-')) {
			return false
		}
	}
	return s != ""
}

func hasNode(m *config.Manifest, name string) bool {
	_, agent := m.Agents[name]
	_, team := m.Teams[name]
	return agent || team
}

// notInManifest is the error for a node the manifest does not have.
func notInManifest(m *config.Manifest, source, name string) error {
	names := append(append([]string{}, m.AgentOrder...), m.TeamOrder...)
	if source == builtInName {
		source = "the built-in demo (no manifest here: " + strings.Join(manifestFiles, ", ") + "; name one with -c)"
	}
	return fmt.Errorf("agent %q is not in %s; it has: %s", name, source, strings.Join(names, ", "))
}
