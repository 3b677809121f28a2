// Remote agents: `type: agui` members, AgentPool's AG-UI agents, reached
// as an AG-UI client (package external/aguiagent).

package config

import (
	"fmt"
	"maps"
	"net/url"
	"slices"
	"time"
)

// AgentAGUI is a remote agent reached over AG-UI: ExternalAgent.AGUI.
const AgentAGUI = "agui"

// AGUIRemote is where a `type: agui` agent is and how to reach it.
type AGUIRemote struct {
	// Endpoint is the URL RunAgentInput is posted to.
	Endpoint string
	// Headers are sent with every request; ${VAR} in a value is the
	// environment variable VAR, read when the pool is built (an unset one
	// is an error), so that credentials stay out of the manifest.
	Headers map[string]string
	// Timeout bounds one delegation (AgentPool's `timeout`, seconds); 0:
	// none beyond the spawn's.
	Timeout time.Duration
	// StartupCommand is a shell command line that starts the server
	// (AgentPool's startup_command), run in the pool's workspace by the
	// first delegation and ended with the pool; StartupDelay is
	// startup_delay (seconds): how long the server may take to accept
	// connections (at least 30 s).
	StartupCommand string
	StartupDelay   time.Duration
}

var (
	aguiKeys = []string{"type", "endpoint", "description", "display_name", "name", "headers", "timeout", "startup_command", "startup_delay"}
	// aguiRefused are AgentPool's AG-UI agent keys agentpool does not
	// read, with why.
	aguiRefused = map[string]string{
		"url": "url is not a key of AgentPool's AG-UI agents: the key is endpoint (the URL RunAgentInput is posted to)",
	}
	// aguiClientSide are the keys of AgentPool's AG-UI agents that offer
	// the remote agent tools run by the client (client-side tools).
	aguiClientSide = []string{"tools", "toolsets", "mcp_servers"}
)

// aguiAgent reads an agent of `type: agui`.
func (p *parser) aguiAgent(a *Agent, e entry, path string) {
	known := append(slices.Clone(aguiKeys), aguiClientSide...)
	for k := range aguiRefused {
		known = append(known, k)
	}
	f, ok := p.object(e.val, path, known)
	if !ok {
		return
	}
	r := &AGUIRemote{}
	a.External = &ExternalAgent{Provider: AgentAGUI, AGUI: r}
	if fe, ok := f["description"]; ok {
		a.Description = p.str(fe.val, path+".description")
	}
	for _, k := range []string{"name", "display_name"} {
		if fe, ok := f[k]; ok {
			a.DisplayName = p.str(fe.val, join(path, k))
		}
	}
	ue, ok := f["endpoint"]
	if !ok {
		p.add(e.line(), path, "missing required field \"endpoint\" (the URL the AG-UI agent answers runs at)")
	} else if r.Endpoint = p.requiredStr(ue.val, path+".endpoint"); r.Endpoint != "" {
		if u, err := url.Parse(r.Endpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			p.add(ue.val.Line, path+".endpoint", "%q is not an http:// or https:// URL", r.Endpoint)
		}
	}
	if fe, ok := f["headers"]; ok {
		r.Headers = p.stringMap(fe.val, path+".headers")
	}
	if fe, ok := f["timeout"]; ok {
		r.Timeout = p.seconds(fe.val, path+".timeout")
	}
	if fe, ok := f["startup_command"]; ok {
		r.StartupCommand = p.requiredStr(fe.val, path+".startup_command")
	}
	if fe, ok := f["startup_delay"]; ok {
		r.StartupDelay = p.seconds(fe.val, path+".startup_delay")
		if r.StartupCommand == "" {
			p.add(fe.line(), path+".startup_delay", "startup_delay needs startup_command (the command that starts the server)")
		}
	}
	(compatKeys{p}).aguiClientTools(a, f, path)
	for _, k := range slices.Sorted(maps.Keys(aguiRefused)) {
		if fe, ok := f[k]; ok && !empty(fe.val) {
			p.add(fe.line(), join(path, k), "%s", aguiRefused[k])
		}
	}
}

// aguiClientTools reads the client-side tools of an AG-UI agent. In
// AgentPool they are Python functions (its ToolConfig: import paths) and
// the tools of MCP servers, offered in RunAgentInput.tools and run by the
// client when the remote agent calls them. agentpool's client offers
// none: the Python ones are skipped with a warning, as for every agent
// (the remote agent runs with its own tools); any other entry is refused;
// MCP servers are warned about (not started, not offered).
func (o compatKeys) aguiClientTools(a *Agent, f map[string]entry, path string) {
	p := o.p
	var l toolsetList
	for _, k := range byLine(f, "tools", "toolsets") {
		for i, c := range p.list(f[k].val, join(path, k)) {
			ip := index(join(path, k), i)
			if !(compatKeys{p}).pythonToolEntry(c, ip, &l) {
				p.add(c.Line, ip, "client-side tools of an AG-UI agent are not supported: agentpool offers the remote agent none of its tools (AgentPool's are Python functions); the remote agent runs its own tools, so remove the entry")
			}
		}
	}
	for _, t := range l.python {
		what := fmt.Sprintf("client-side tool %q is the Python function %s", t.name, t.ref)
		if t.set {
			what = fmt.Sprintf("client-side toolset %s is a Python class", t.ref)
		}
		p.warn(t.line, t.path, "skipped: %s, which agentpool cannot load or run; AG-UI agent %q runs with its own tools only", what, a.Name)
	}
	if fe, ok := f["mcp_servers"]; ok && !empty(fe.val) {
		p.warn(fe.line(), path+".mcp_servers", "skipped: agentpool offers an AG-UI agent no client-side tools, so these MCP servers are not started and %q runs with its own tools only; configure them on the remote agent", a.Name)
	}
}
