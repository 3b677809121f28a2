// The session's model: the `models` state of session/new and session/load
// and session/set_model (ACP's unstable model selection, which editors such
// as Zed show as a model picker).

package acp

import (
	"encoding/json"
	"slices"

	"github.com/agentpool/agentpool/session"
)

// metaModelOf is the stored session's metadata key of the agent whose
// model the session runs on when the editor chose another than its mode's
// own, so that session/load and a restarted server keep the choice.
const metaModelOf = "acp_model_of"

type modelInfo struct {
	ModelID     string `json:"modelId"`
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
}

type modelState struct {
	CurrentModelID  string      `json:"currentModelId"`
	AvailableModels []modelInfo `json:"availableModels"`
}

// offeredModel is one model an editor may choose: the model of a plain
// agent of the pool (its own settings, price and context window), named by
// the agent's model id.
type offeredModel struct {
	id    string // the agent's model id: "gpt-4o", a test model's agent name
	agent string // the first agent (default node first, then the manifest's order) that runs on it
}

// poolModels lists the models of the pool's plain agents, each model once:
// the first agent that runs on it, the default node first, then the
// manifest's order. External agents and teams run on models of their own
// that the pool cannot lend to another agent, so they offer none.
func poolModels(c *conn) []offeredModel {
	p := c.s.pool
	m := p.Manifest()
	var out []offeredModel
	for _, name := range append([]string{p.DefaultNode()}, m.AgentOrder...) {
		a, ok := m.Agents[name]
		if !ok || a.External != nil {
			continue
		}
		n, ok := p.Node(name)
		if !ok || n.ModelID() == "" {
			continue
		}
		if !slices.ContainsFunc(out, func(o offeredModel) bool { return o.id == n.ModelID() }) {
			out = append(out, offeredModel{id: n.ModelID(), agent: name})
		}
	}
	return out
}

// sessionModels is the models state of a session in mode, running on the
// model of agent modelOf ("" for the mode's own): nil when the mode is not
// a plain agent (a team, an external agent), which runs on its own models.
func sessionModels(c *conn, mode, modelOf string) *modelState {
	if !plainAgent(c, mode) {
		return nil
	}
	of := mode
	if modelOf != "" {
		of = modelOf
	}
	st := &modelState{AvailableModels: []modelInfo{}}
	if n, ok := c.s.pool.Node(of); ok {
		st.CurrentModelID = n.ModelID()
	}
	for _, o := range poolModels(c) {
		st.AvailableModels = append(st.AvailableModels, modelInfo{ModelID: o.id, Name: o.id, Description: "the model of agent " + o.agent})
	}
	return st
}

// plainAgent reports whether the pool's node name is an agent of its own
// with a model (not a team nor an external agent).
func plainAgent(c *conn, name string) bool {
	a, ok := c.s.pool.Manifest().Agents[name]
	if !ok || a.External != nil {
		return false
	}
	n, ok := c.s.pool.Node(name)
	return ok && n.ModelID() != ""
}

// setModel answers session/set_model: the session's next prompts run its
// mode's agent on the chosen model (pool.RunRequest.ModelOf); its children
// keep their own models. The choice is stored with the session and lasts
// until another session/set_model or a session/set_mode, which goes back
// to the new mode's own model.
func setModel(c *conn, params json.RawMessage) (any, *rpcError) {
	var p struct {
		SessionID string `json:"sessionId"`
		ModelID   string `json:"modelId"`
	}
	if err := decodeParams(params, &p); err != nil {
		return nil, err
	}
	if p.SessionID == "" || p.ModelID == "" {
		return nil, invalidParams("sessionId and modelId are required")
	}
	offered := poolModels(c)
	i := slices.IndexFunc(offered, func(o offeredModel) bool { return o.id == p.ModelID })
	if i < 0 {
		ids := make([]string, len(offered))
		for j, o := range offered {
			ids[j] = o.id
		}
		return nil, invalidParams("unknown model %q; available: %v", p.ModelID, ids)
	}
	s, rerr := c.session(p.SessionID)
	if rerr != nil {
		return nil, rerr
	}
	s.mu.Lock()
	mode := s.mode
	s.mu.Unlock()
	if !plainAgent(c, mode) {
		return nil, invalidParams("mode %q is not an agent with a model of its own (a team or an external agent runs on its members' models); choose an agent's mode first", mode)
	}
	if c.s.pool.Engine() != nil {
		return nil, invalidParams("another model for a session is not done on a durable execution engine: %q runs on its own model", mode)
	}
	of := offered[i].agent
	if n, ok := c.s.pool.Node(mode); ok && n.ModelID() == p.ModelID {
		of = "" // the mode's own model
	}
	s.mu.Lock()
	s.modelOf = of
	s.mu.Unlock()
	storeModelOf(c, s.id, of)
	return struct{}{}, nil
}

// storeModelOf records the session's model choice in its metadata.
func storeModelOf(c *conn, sid, of string) {
	err := c.s.pool.Store().UpdateSession(c.ctx, sid, func(st *session.Session) {
		if of == "" {
			delete(st.Metadata, metaModelOf)
			return
		}
		if st.Metadata == nil {
			st.Metadata = map[string]any{}
		}
		st.Metadata[metaModelOf] = of
	})
	if err != nil {
		c.log.Warn("acp: store the session's model", "session", sid, "err", err)
	}
}

// storedModelOf is the model choice a stored session keeps, when its agent
// is still an agent of the pool other than mode.
func storedModelOf(c *conn, stored session.Session, mode string) string {
	of, _ := stored.Metadata[metaModelOf].(string)
	if of == "" || of == mode || !plainAgent(c, of) || !plainAgent(c, mode) {
		return ""
	}
	return of
}
