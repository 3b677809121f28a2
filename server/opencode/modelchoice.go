package opencode

import (
	"fmt"
	"strings"

	"github.com/agentpool/agentpool/agent"
	"github.com/agentpool/agentpool/server/opencode/internal/wire"
)

// The model a prompt names (its body's model: the TUI's /models choice,
// `opencode run --model`). The models offered are those GET /provider
// lists: each agent's model, which is a real model instance (the agent's,
// with its settings and price), and the teams' own (they run on their
// members' models). A prompt that names one of them other than its
// agent's own runs that turn of the root agent on it
// (pool.RunRequest.ModelOf); the children keep their own models, as
// OpenCode's subagents do. Any other model is refused.

// Functions of the server's base, not methods: every route group embeds
// base, and methods of base would count among each group's methods
// (tests/floors bounds them).

// modelChoice is the model a prompt's turn runs on.
type modelChoice struct {
	ref wire.ModelRef // shown on the turn's messages
	// of is the agent whose model it is when it is not the prompt's
	// node's own (pool.RunRequest.ModelOf); "" for the node's own.
	of string
}

// modelNames are the agents, in the order GET /provider lists their
// models: the default node first, then the manifest's order.
func modelNames(s *base) []string {
	m := s.pool.Manifest()
	return append([]string{s.pool.DefaultNode()}, m.AgentOrder...)
}

// modelAgent returns the agent whose model ref is, the first in GET
// /provider's order; "" when no agent of the pool runs on it.
func modelAgent(s *base, ref wire.ModelRef) string {
	m := s.pool.Manifest()
	for _, name := range modelNames(s) {
		if a, ok := m.Agents[name]; ok && a.External == nil && s.modelOf(name) == ref {
			return name
		}
	}
	return ""
}

// refOfModelID is the ref a run's model id (event.RunStarted.Model, as
// stored) is shown with: node's own when it is its own id, else the first
// agent's whose model has that id.
func refOfModelID(s *base, node, modelID string) wire.ModelRef {
	own := s.modelOf(node)
	if modelID == "" || modelID == own.ModelID {
		return own
	}
	m := s.pool.Manifest()
	for _, name := range modelNames(s) {
		if _, ok := m.Agents[name]; ok {
			if r := s.modelOf(name); r.ModelID == modelID {
				return r
			}
		}
	}
	return wire.ModelRef{ProviderID: own.ProviderID, ModelID: modelID}
}

// chooseModel resolves the model of a prompt to node: ref nil (or empty),
// or node's own, keeps node's own. The error is the client's mistake, in
// words for the person who chose the model (the TUI shows it).
func chooseModel(s *base, node string, ref *wire.ModelRef) (modelChoice, error) {
	own := s.modelOf(node)
	if ref == nil || (ref.ProviderID == "" && ref.ModelID == "") || *ref == own {
		return modelChoice{ref: own}, nil
	}
	name := modelAgent(s, *ref)
	if name == "" {
		if isTeamModel(s, *ref) {
			return modelChoice{}, fmt.Errorf("model %s/%s is the teams' (they run on their members' models), not one agent %q can run on", ref.ProviderID, ref.ModelID, node)
		}
		return modelChoice{}, fmt.Errorf("model %s/%s is not offered by this server; its models (GET /provider): %s", ref.ProviderID, ref.ModelID, strings.Join(offeredModels(s), ", "))
	}
	if n, ok := s.pool.Node(node); !ok || !isPlainAgent(n) {
		return modelChoice{}, fmt.Errorf("agent %q is not a plain agent (a team, or an external or connected agent): it runs on its own models (%s/%s), so it takes no other model", node, own.ProviderID, own.ModelID)
	}
	return modelChoice{ref: *ref, of: name}, nil
}

// isPlainAgent reports whether n is an agent whose run can take another
// model (pool.RunRequest.ModelOf).
func isPlainAgent(n any) bool {
	_, ok := n.(*agent.Agent)
	return ok
}

// isTeamModel reports whether ref is a node's that is not an agent (a
// team's, listed so that the TUI shows it for the team).
func isTeamModel(s *base, ref wire.ModelRef) bool {
	m := s.pool.Manifest()
	for _, name := range s.pool.NodeNames() {
		if _, isAgent := m.Agents[name]; !isAgent && s.modelOf(name) == ref {
			return true
		}
	}
	return false
}

// offeredModels lists the agents' models as "provider/model", once each,
// in GET /provider's order.
func offeredModels(s *base) []string {
	var out []string
	seen := map[wire.ModelRef]bool{}
	m := s.pool.Manifest()
	for _, name := range modelNames(s) {
		if a, ok := m.Agents[name]; ok && a.External == nil {
			if r := s.modelOf(name); !seen[r] {
				seen[r] = true
				out = append(out, r.ProviderID+"/"+r.ModelID)
			}
		}
	}
	return out
}

// parseModelString reads the "provider/model" of a command's model (the
// TUI sends it so): nil for "".
func parseModelString(s string) (*wire.ModelRef, error) {
	if s == "" {
		return nil, nil
	}
	p, m, ok := strings.Cut(s, "/")
	if !ok || p == "" || m == "" {
		return nil, fmt.Errorf("model must be \"provider/model\", got %q", s)
	}
	return &wire.ModelRef{ProviderID: p, ModelID: m}, nil
}
