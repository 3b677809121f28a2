package a2a

import (
	"fmt"
	"net/http"

	"github.com/a2aproject/a2a-go/a2a"
)

// ProtocolVersion is the A2A version the cards declare (that of the SDK,
// a2a-go v0.3).
const ProtocolVersion = "0.3.0"

// bearerScheme is the name of the security scheme of a server with a
// token.
const bearerScheme a2a.SecuritySchemeName = "bearer"

// card is the agent card of node name, its url on base.
func (s *Server) card(base, name string, root bool) (*a2a.AgentCard, bool) {
	n, ok := s.pool.Node(name)
	if !ok {
		return nil, false
	}
	url := base + "/agents/" + name
	if root {
		url = base + "/"
	}
	desc := n.Description()
	if desc == "" {
		desc = fmt.Sprintf("agentpool %s %s", n.SourceType(), name)
	}
	c := &a2a.AgentCard{
		Name: name, Description: desc, URL: url, Version: s.opts.Version,
		ProtocolVersion:    ProtocolVersion,
		PreferredTransport: a2a.TransportProtocolJSONRPC,
		Capabilities:       a2a.AgentCapabilities{Streaming: true},
		DefaultInputModes:  []string{"text/plain"},
		DefaultOutputModes: []string{"text/plain"},
		Provider:           &a2a.AgentProvider{Org: "agentpool", URL: "https://github.com/agentpool/agentpool"},
		Skills: []a2a.AgentSkill{{
			ID: name, Name: name, Description: desc, Tags: []string{string(n.SourceType())},
		}},
	}
	if s.opts.Token != "" {
		c.SecuritySchemes = a2a.NamedSecuritySchemes{bearerScheme: a2a.HTTPAuthSecurityScheme{Scheme: "Bearer",
			Description: "the server's token (agentpool serve a2a --token)"}}
		c.Security = []a2a.SecurityRequirements{{bearerScheme: a2a.SecuritySchemeScopes{}}}
	}
	return c, true
}

// baseURL is the server's address for the cards: Options.BaseURL, else
// that of the request.
func (s *Server) baseURL(r *http.Request) string {
	if s.opts.BaseURL != "" {
		return trimSlash(s.opts.BaseURL)
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

func trimSlash(s string) string {
	for len(s) > 0 && s[len(s)-1] == '/' {
		s = s[:len(s)-1]
	}
	return s
}

func (s *Server) serveCard(w http.ResponseWriter, r *http.Request, name string) {
	root := name == ""
	if root {
		name = s.pool.DefaultNode()
	}
	c, ok := s.card(s.baseURL(r), name, root)
	if !ok {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": fmt.Sprintf("unknown agent %q", name)})
		return
	}
	writeJSON(w, http.StatusOK, c)
}

func (s *Server) serveAgents(w http.ResponseWriter, r *http.Request) {
	base := s.baseURL(r)
	out := struct {
		Agents []*a2a.AgentCard `json:"agents"`
	}{Agents: []*a2a.AgentCard{}}
	for _, name := range s.pool.NodeNames() {
		if c, ok := s.card(base, name, false); ok {
			out.Agents = append(out.Agents, c)
		}
	}
	writeJSON(w, http.StatusOK, out)
}
