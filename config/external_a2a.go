// Remote agents: `type: a2a` members, reached over the Agent2Agent
// protocol (package external/a2aagent).

package config

import (
	"net/url"
	"strings"
)

// A2ARemote is where a `type: a2a` agent is and how to authenticate.
type A2ARemote struct {
	// URL is the agent's base URL (its card at the well-known path under
	// it) or its card's URL (ending in .json).
	URL string
	// AuthEnv names the environment variable that holds the credential,
	// read when the pool is built (never written in the manifest);
	// AuthHeader is the header it goes in (default Authorization) and
	// AuthScheme its prefix (default Bearer for Authorization, none for
	// another header).
	AuthEnv, AuthHeader, AuthScheme string
	// Headers are sent as they are with every request (no secrets: use
	// AuthEnv).
	Headers map[string]string
}

var a2aKeys = []string{"type", "url", "description", "display_name", "name", "auth_env", "auth_header", "auth_scheme", "headers", "cancel_grace"}

// a2aAgent reads an agent of `type: a2a`.
func (p *parser) a2aAgent(a *Agent, e entry, path string) {
	f, ok := p.object(e.val, path, a2aKeys)
	if !ok {
		return
	}
	r := &A2ARemote{}
	a.External = &ExternalAgent{Provider: AgentA2A, A2A: r}
	if fe, ok := f["description"]; ok {
		a.Description = p.str(fe.val, path+".description")
	}
	for _, k := range []string{"name", "display_name"} {
		if fe, ok := f[k]; ok {
			a.DisplayName = p.str(fe.val, join(path, k))
		}
	}
	ue, ok := f["url"]
	if !ok {
		p.add(e.line(), path, "missing required field \"url\" (the remote agent's base URL, or its agent card's URL)")
	} else if r.URL = p.requiredStr(ue.val, path+".url"); r.URL != "" {
		if u, err := url.Parse(r.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			p.add(ue.val.Line, path+".url", "%q is not an http:// or https:// URL", r.URL)
		}
	}
	if fe, ok := f["auth_env"]; ok {
		r.AuthEnv, _ = p.word(fe.val, path+".auth_env")
	}
	for _, k := range []string{"auth_header", "auth_scheme"} {
		fe, ok := f[k]
		if !ok {
			continue
		}
		v := p.str(fe.val, path+"."+k)
		if r.AuthEnv == "" {
			p.add(fe.line(), path+"."+k, "%s needs auth_env (the environment variable that holds the credential)", k)
		}
		if k == "auth_header" {
			r.AuthHeader = v
		} else {
			r.AuthScheme = v
		}
	}
	if r.AuthEnv != "" && r.AuthHeader == "" {
		r.AuthHeader = "Authorization"
		if _, set := f["auth_scheme"]; !set {
			r.AuthScheme = "Bearer"
		}
	}
	if fe, ok := f["headers"]; ok {
		r.Headers = p.stringMap(fe.val, path+".headers")
		for k := range r.Headers {
			if r.AuthHeader != "" && strings.EqualFold(k, r.AuthHeader) {
				p.add(fe.val.Line, path+".headers", "header %s is also auth_header: set it once", k)
			}
		}
	}
	if fe, ok := f["cancel_grace"]; ok {
		a.External.CancelGrace = p.duration(fe.val, path+".cancel_grace")
	}
}
