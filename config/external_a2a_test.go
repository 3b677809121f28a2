package config

import (
	"strings"
	"testing"
	"time"
)

// TestA2AAgents: `type: a2a` members, their auth defaults, and a team of
// them.
func TestA2AAgents(t *testing.T) {
	m, err := Parse("agentpool.yaml", []byte(`
agents:
  lead: {model: test}
  far:
    type: a2a
    url: https://agents.example.com/agents/planner
    description: The other team.
    auth_env: FAR_TOKEN
    cancel_grace: 3s
  key:
    type: a2a
    url: http://127.0.0.1:8766/.well-known/agent-card.json
    auth_env: KEY
    auth_header: X-Api-Key
    headers: {X-Team: blue}
  open: {type: a2a, url: "http://127.0.0.1:8766/"}
teams:
  mixed: {mode: parallel, members: [far, key, open, lead]}
`))
	if err != nil {
		t.Fatal(err)
	}
	far := m.Agents["far"]
	if r := far.External.A2A; r == nil || r.URL != "https://agents.example.com/agents/planner" || r.AuthEnv != "FAR_TOKEN" ||
		r.AuthHeader != "Authorization" || r.AuthScheme != "Bearer" || far.Description != "The other team." || far.External.CancelGrace != 3*time.Second {
		t.Errorf("far = %+v, remote %+v", far, far.External.A2A)
	}
	if r := m.Agents["key"].External.A2A; r.AuthHeader != "X-Api-Key" || r.AuthScheme != "" || r.Headers["X-Team"] != "blue" {
		t.Errorf("key = %+v", r)
	}
	if r := m.Agents["open"].External.A2A; r.AuthEnv != "" || r.AuthHeader != "" {
		t.Errorf("open = %+v", r)
	}
}

// TestA2AAgentErrors: each mistake is reported at its line and field.
func TestA2AAgentErrors(t *testing.T) {
	for _, c := range []struct{ src, want string }{
		{"agents:\n  r:\n    type: a2a\n", `agentpool.yaml:2: agents.r: missing required field "url"`},
		{"agents:\n  r:\n    type: a2a\n    url: ftp://x/y\n", `agentpool.yaml:4: agents.r.url: "ftp://x/y" is not an http:// or https:// URL`},
		{"agents:\n  r:\n    type: a2a\n    url: http://x\n    auth_header: X-Key\n", "agentpool.yaml:5: agents.r.auth_header: auth_header needs auth_env"},
		{"agents:\n  r:\n    type: a2a\n    url: http://x\n    model: test\n", "agentpool.yaml:5: agents.r.model"},
		{"agents:\n  r:\n    type: a2a\n    url: http://x\n    auth_env: T\n    headers: {authorization: x}\n", "agentpool.yaml:6: agents.r.headers: header authorization is also auth_header"},
	} {
		_, err := Parse("agentpool.yaml", []byte(c.src))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want %q", c.src, err, c.want)
		}
	}
}
