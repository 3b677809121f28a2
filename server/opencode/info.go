package opencode

import (
	"net/http"
	"os"
	"path/filepath"
	"slices"

	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/server/opencode/internal/wire"
)

// configAPI serves what the pool is: paths, project, health, agents,
// config and providers.
type configAPI struct {
	*base
}

// dirOrDefault is the request's directory, else def (the server's).
func dirOrDefault(r *http.Request, def string) string {
	if d := requestDir(r); d != "" {
		return d
	}
	return def
}

// handleProviderList answers GET /provider: the providers of the pool's
// agents, every one connected (the pool holds the keys).
func (s *configAPI) handleProviderList(w http.ResponseWriter, r *http.Request) {
	p := s.providers()
	out := wire.ProviderList{All: p.Providers, Default: p.Default, Connected: []string{}}
	for _, prov := range p.Providers {
		out.Connected = append(out.Connected, prov.ID)
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *configAPI) handlePath(w http.ResponseWriter, r *http.Request) {
	dir := dirOrDefault(r, s.dir)
	home, _ := os.UserHomeDir()
	state := ""
	if d, err := os.UserCacheDir(); err == nil {
		state = filepath.Join(d, "agentpool")
	}
	cfg := ""
	if p := s.pool.Manifest().Path; p != "" {
		cfg = filepath.Dir(p)
	} else if d, err := os.UserConfigDir(); err == nil {
		cfg = filepath.Join(d, "agentpool")
	}
	writeJSON(w, http.StatusOK, wire.Path{Home: home, State: state, Config: cfg, Worktree: dir, Directory: dir})
}

func (s *configAPI) handleProject(w http.ResponseWriter, r *http.Request) {
	dir := dirOrDefault(r, s.dir)
	t := ms(s.started)
	writeJSON(w, http.StatusOK, wire.Project{ID: projectID(dir), Worktree: dir, Name: filepath.Base(dir), Time: wire.ProjectTime{Created: t, Updated: t}, Sandboxes: []string{}})
}

func (s *configAPI) handleHealth(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, wire.Health{Healthy: true, Version: s.opts.Version})
}

// modeOf is a node's OpenCode agent mode: the default node is the
// primary agent; every other node may be chosen as the session's agent or
// delegated to.
func (s *configAPI) modeOf(name string) string {
	if name == s.pool.DefaultNode() {
		return "primary"
	}
	return "all"
}

// handleAgents answers GET /agent: the pool's agents and teams.
func (s *configAPI) handleAgents(w http.ResponseWriter, r *http.Request) {
	m := s.pool.Manifest()
	out := []wire.Agent{}
	for _, name := range s.pool.NodeNames() {
		n, ok := s.pool.Node(name)
		if !ok {
			continue
		}
		ref := s.modelOf(name)
		a := wire.Agent{Name: name, Description: n.Description(), Mode: s.modeOf(name), Permission: []any{}, Model: &ref,
			Options: map[string]any{"sourceType": string(n.SourceType())}}
		if ag, ok := m.Agents[name]; ok {
			a.Prompt = ag.SystemPrompt
		}
		out = append(out, a)
	}
	writeJSON(w, http.StatusOK, out)
}

// handleConfig answers GET /config: the default agent and model and the
// agents, in OpenCode's config shape.
func (s *configAPI) handleConfig(w http.ResponseWriter, r *http.Request) {
	def := s.pool.DefaultNode()
	ref := s.modelOf(def)
	// share "disabled": agentpool has no share service, and OpenCode's
	// clients read this to offer no sharing (the TUI 1.18.33 disables its
	// /share; its share call would show a TypeError, not the route's 400).
	cfg := wire.Config{DefaultAgent: def, Model: ref.ProviderID + "/" + ref.ModelID, Agent: map[string]wire.AgentConfig{}, Share: "disabled"}
	m := s.pool.Manifest()
	for _, name := range s.pool.NodeNames() {
		n, ok := s.pool.Node(name)
		if !ok {
			continue
		}
		r := s.modelOf(name)
		ac := wire.AgentConfig{Description: n.Description(), Mode: s.modeOf(name), Model: r.ProviderID + "/" + r.ModelID}
		if ag, ok := m.Agents[name]; ok {
			ac.Prompt = ag.SystemPrompt
		}
		cfg.Agent[name] = ac
	}
	writeJSON(w, http.StatusOK, cfg)
}

var providerNames = map[string]string{
	config.ModelOpenAI:    "OpenAI",
	config.ModelAnthropic: "Anthropic",
	providerAgentPool:     "AgentPool (offline test models)",
}

// handleProviders answers GET /config/providers: the providers and models
// the pool's agents use; default maps each provider to the model of its
// first agent (the default node's first).
func (s *configAPI) handleProviders(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, s.providers())
}

// providers lists the providers and models the pool's agents use.
func (s *configAPI) providers() wire.Providers {
	m := s.pool.Manifest()
	out := wire.Providers{Providers: []wire.Provider{}, Default: map[string]string{}}
	byID := map[string]*wire.Provider{}
	var order []string
	// provider is the entry of a provider id, added in first-seen order.
	provider := func(id string) *wire.Provider {
		p := byID[id]
		if p == nil {
			p = &wire.Provider{ID: id, Name: providerNames[id], Source: "config",
				Env: []string{}, Options: map[string]any{}, Models: map[string]wire.Model{}}
			byID[id] = p
			order = append(order, id)
		}
		return p
	}
	names := append([]string{s.pool.DefaultNode()}, m.AgentOrder...)
	for _, name := range names {
		a, ok := m.Agents[name]
		if !ok {
			continue
		}
		ref := s.modelOf(name)
		p := provider(ref.ProviderID)
		if env := a.Model.APIKeyEnv; env != "" && !slices.Contains(p.Env, env) {
			p.Env = append(p.Env, env)
		}
		if a.Model.BaseURL != "" {
			p.Options["baseURL"] = a.Model.BaseURL
		}
		if _, seen := out.Default[ref.ProviderID]; !seen {
			out.Default[ref.ProviderID] = ref.ModelID
		}
		if _, ok := p.Models[ref.ModelID]; ok {
			continue
		}
		p.Models[ref.ModelID] = wire.Model{
			ID: ref.ModelID, ProviderID: ref.ProviderID, Name: ref.ModelID,
			API:          wire.ModelAPI{ID: ref.ModelID, URL: a.Model.BaseURL, Npm: ""},
			Capabilities: wire.ModelCaps{Temperature: ref.ProviderID != providerAgentPool, Reasoning: true, Toolcall: true, Input: wire.ModelModality{Text: true}, Output: wire.ModelModality{Text: true}},
			Cost:         wire.ModelCost{Input: a.Model.InputPrice, Output: a.Model.OutputPrice},
			Limit:        wire.ModelLimit{Output: int64(a.Model.MaxTokens)},
			Status:       "active", Options: map[string]any{}, Headers: map[string]string{}, ReleaseDate: "",
		}
	}
	// The teams' own "models" (a team runs on its members' models), so
	// that the TUI, which sends the model it shows with each prompt,
	// shows and sends a team's own for a team rather than another
	// agent's (which a team cannot take: modelchoice.go).
	for _, name := range s.pool.NodeNames() {
		if _, isAgent := m.Agents[name]; isAgent {
			continue
		}
		ref := s.modelOf(name)
		p := provider(ref.ProviderID)
		if _, ok := p.Models[ref.ModelID]; ok {
			continue
		}
		p.Models[ref.ModelID] = wire.Model{
			ID: ref.ModelID, ProviderID: ref.ProviderID, Name: ref.ModelID + " (its members' models)",
			API:          wire.ModelAPI{ID: ref.ModelID},
			Capabilities: wire.ModelCaps{Reasoning: true, Toolcall: true, Input: wire.ModelModality{Text: true}, Output: wire.ModelModality{Text: true}},
			Status:       "active", Options: map[string]any{}, Headers: map[string]string{},
		}
	}
	for _, pid := range order {
		out.Providers = append(out.Providers, *byID[pid])
	}
	return out
}
