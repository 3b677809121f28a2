// The AgentPool keys of agents, teams and the manifest's top level that
// agentpool maps onto its own or accepts without effect.

package config

import (
	"strings"

	"go.yaml.in/yaml/v3"
)

// External agent kinds of AgentPool: bridges to other programs.
var externalAgentKinds = map[string]string{
	"file": "file agents are markdown files that AgentPool converts",
}

// agentKind checks an agent's `type:` (AgentPool's discriminator): native,
// the default, is agentpool's kind of agent; acp and claude_code are
// external agents (returned as external, read by parser.external). It
// returns false, after reporting it, for any other kind; their other keys
// are then not read.
func (p *parser) agentKind(e entry, path string) (native bool, external string) {
	tn := findKey(e.val, "type")
	if tn == nil {
		return true, ""
	}
	d := deref(tn)
	if d.Kind != yaml.ScalarNode || isNull(d) {
		return true, "" // reported as a bad value when the fields are read
	}
	switch kind := strings.TrimSpace(d.Value); {
	case kind == "native":
		return true, ""
	case externalKind(kind):
		return false, kind
	case ACPPresets[kind].Command != "":
		// AgentPool's codex agents (and the ACP provider names some of
		// its manifests write as the type) are the ACP presets here.
		p.add(tn.Line, path+".type", "agent type %q is AgentPool's own bridge to %s; agentpool runs %s over ACP: write type: acp with provider: %s (docs/external-agents.md)", kind, kind, kind, kind)
	case externalAgentKinds[kind] != "":
		p.add(tn.Line, path+".type", "agent type %q is not supported: agentpool runs native agents (a model, a prompt and tools); %s", kind, externalAgentKinds[kind])
	default:
		p.add(tn.Line, path+".type", "unknown agent type %q (agentpool runs native agents: leave type out or write \"native\"; and external ones: acp, claude_code, a2a, agui)", kind)
	}
	return false, ""
}

// agentCompat reads the AgentPool keys of an agent.
func (p *parser) agentCompat(a *Agent, f map[string]entry, path string) {
	if fe, ok := f["name"]; ok {
		a.DisplayName = p.str(fe.val, path+".name")
	}
	if fe, ok := f["display_name"]; ok {
		a.DisplayName = p.str(fe.val, path+".display_name")
	}
	if fe, ok := f["output_type"]; ok && !isNull(fe.val) {
		a.Output = p.outputType(fe.val, path+".output_type")
	}
	if fe, ok := f["output_retries"]; ok {
		n := p.count(fe.val, path+".output_retries")
		if a.Output != nil && !isNull(fe.val) {
			a.Output.Retries = n
		}
	}
	if fe, ok := f["connections"]; ok {
		a.Connections = p.connections(fe.val, path+".connections")
	}
	if fe, ok := f["requires_tool_confirmation"]; ok {
		p.toolConfirmation(a, fe.val, path+".requires_tool_confirmation")
	}
	if fe, ok := f["usage_limits"]; ok {
		p.usageLimits(a, fe.val, path+".usage_limits")
	}
	if fe, ok := f["retries"]; ok {
		p.count(fe.val, path+".retries") // tool retries: agentpool gives every tool error to the model
	}
	if fe, ok := f["end_strategy"]; ok {
		if v, ok := p.word(fe.val, path+".end_strategy"); ok && v != "early" && v != "exhaust" {
			p.add(fe.val.Line, path+".end_strategy", "unknown end strategy %q (early or exhaust)", v)
		}
	}
	for _, k := range []string{"avatar", "config_file_path"} {
		if fe, ok := f[k]; ok {
			p.str(fe.val, join(path, k))
		}
	}
	if fe, ok := f["model_providers"]; ok {
		for i, c := range p.list(fe.val, path+".model_providers") {
			p.str(c, index(path+".model_providers", i))
		}
	}
	if fe, ok := f["session"]; ok && !isNull(fe.val) {
		p.warn(fe.line(), path+".session", "ignored: agentpool stores every session and loads none by name (continue one with `agentpool run --session ID`)")
	}
	if fe, ok := f["event_handlers"]; ok {
		p.eventHandlers(fe.val, path+".event_handlers")
	}
	p.nodeCompat(f, path)
	for _, k := range []string{"knowledge", "environment", "hooks"} {
		if fe, ok := f[k]; ok && !empty(fe.val) {
			p.refuse(fe, path)
		}
	}
	if fe, ok := f["tool_mode"]; ok && !empty(fe.val) {
		p.python(fe.val.Line, path+".tool_mode", "tool_mode %s runs tools from generated Python code", describe(fe.val))
	}
}

// nodeCompat reads the AgentPool keys that agents and teams share.
func (p *parser) nodeCompat(f map[string]entry, path string) {
	if fe, ok := f["triggers"]; ok && !empty(fe.val) {
		p.refuse(fe, path)
	}
	if fe, ok := f["input_provider"]; ok && !empty(fe.val) {
		p.python(fe.val.Line, path+".input_provider", "%s is a Python import path", describe(fe.val))
	}
}

// teamCompat reads the AgentPool keys of a team.
func (p *parser) teamCompat(t *Team, f map[string]entry, path string) {
	if fe, ok := f["name"]; ok {
		t.DisplayName = p.str(fe.val, path+".name")
	}
	if fe, ok := f["display_name"]; ok {
		t.DisplayName = p.str(fe.val, path+".display_name")
	}
	if fe, ok := f["connections"]; ok {
		t.Connections = p.connections(fe.val, path+".connections")
	}
	if fe, ok := f["event_handlers"]; ok {
		p.eventHandlers(fe.val, path+".event_handlers")
	}
	if fe, ok := f["config_file_path"]; ok {
		p.str(fe.val, path+".config_file_path")
	}
	if fe, ok := f["mcp_servers"]; ok && !empty(fe.val) {
		p.add(fe.line(), path+".mcp_servers", "MCP servers of a team are not supported: list them on the member agents or under the manifest's mcp_servers")
	}
	p.nodeCompat(f, path)
}

// empty reports a null, an empty list or an empty mapping.
func empty(n *yaml.Node) bool {
	d := deref(n)
	return isNull(d) || ((d.Kind == yaml.SequenceNode || d.Kind == yaml.MappingNode) && len(d.Content) == 0)
}

// toolConfirmation maps AgentPool's requires_tool_confirmation onto the
// agent's tool_approval: always asks for every tool, never allows every
// tool, per_tool keeps each tool's default. An explicit "*" entry of
// tool_approval wins.
func (p *parser) toolConfirmation(a *Agent, n *yaml.Node, path string) {
	v, ok := p.word(n, path)
	if !ok {
		return
	}
	var all string
	switch v {
	case "always":
		all = ApprovalAsk
	case "never":
		all = ApprovalAllow
	case "per_tool":
		return
	default:
		p.add(n.Line, path, "unknown value %q (always, never or per_tool)", v)
		return
	}
	if _, set := a.ToolApproval["*"]; set {
		return
	}
	if a.ToolApproval == nil {
		a.ToolApproval = map[string]string{}
	}
	a.ToolApproval["*"] = all
}

// usageLimits maps AgentPool's (pydantic-ai's) usage_limits: request_limit
// bounds the model requests of a run, which is max_turns;
// total_tokens_limit is the agent's budget of tokens. The input, output
// and tool call limits have no agentpool equivalent; refusing them is
// safer than running without a limit the manifest relies on.
func (p *parser) usageLimits(a *Agent, n *yaml.Node, path string) {
	f, _ := p.object(n, path, []string{"request_limit", "tool_calls_limit", "input_tokens_limit", "output_tokens_limit", "total_tokens_limit", "count_tokens_before_request"})
	if e, ok := f["request_limit"]; ok {
		if v := p.count(e.val, path+".request_limit"); v > 0 && a.MaxTurns == 0 {
			a.MaxTurns = v
		}
	}
	if e, ok := f["total_tokens_limit"]; ok && a.Budget.Tokens == 0 {
		// pydantic-ai's cap on the tokens of the agent's run: a budget,
		// which also counts the run's children (docs/agentpool-compat.md).
		a.Budget.Tokens = p.budgetTokens(e.val, path+".total_tokens_limit")
	}
	for _, k := range []string{"tool_calls_limit", "input_tokens_limit", "output_tokens_limit"} {
		if e, ok := f[k]; ok && !isNull(e.val) {
			p.add(e.line(), join(path, k), "%s is not supported: agentpool bounds a run by request_limit (max_turns) and the manifest's limits", k)
		}
	}
	if e, ok := f["count_tokens_before_request"]; ok {
		p.boolean(e.val, path+".count_tokens_before_request", false)
	}
}

// eventHandlers reads AgentPool's event_handlers: the builtin console
// printers are redundant with agentpool's own output (warned); text to
// speech is warned (nothing is spoken); callbacks are Python.
func (p *parser) eventHandlers(n *yaml.Node, path string) {
	for i, c := range p.list(n, path) {
		ip := index(path, i)
		typ := ""
		if d := deref(c); d.Kind == yaml.ScalarNode {
			typ = d.Value
		} else if tn := findKey(c, "type"); tn != nil {
			typ = deref(tn).Value
		}
		switch {
		case typ == "builtin" || typ == "simple" || typ == "detailed":
			p.warn(c.Line, ip, "ignored: agentpool's CLI and servers show the event stream themselves")
		case typ == "callback":
			at := c
			if ip2 := findKey(c, "import_path"); ip2 != nil {
				at = ip2
			}
			p.python(at.Line, ip, "event handler %s is a Python import path", describe(at))
		case strings.HasPrefix(typ, "tts"):
			// A run's answers are in its event stream; nothing speaks them.
			p.warn(c.Line, ip, "ignored: event handler %q speaks the answers, and agentpool has no text to speech (the answers are in the event stream)", typ)
		default:
			p.add(c.Line, ip, "unknown event handler %q (AgentPool's are builtin, callback, tts-openai and tts-edge)", typ)
		}
	}
}

// compatTop reads the top-level keys that come from AgentPool (and
// default_model), before the agents, which use them.
func (p *parser) compatTop(m *Manifest, f map[string]entry) {
	if e, ok := f["name"]; ok {
		m.Name = p.str(e.val, "name")
	}
	if e, ok := f["config_file_path"]; ok {
		p.str(e.val, "config_file_path")
	}
	m.DefaultModel = DefaultModelSpec()
	m.Skills = DefaultSkills()
	if e, ok := f["model_variants"]; ok {
		p.modelVariants(e.val, "model_variants")
	}
	if e, ok := f["default_model"]; ok && !isNull(e.val) {
		m.DefaultModel = p.model(e, "default_model")
		p.defaultModel = &m.DefaultModel
	}
	if e, ok := f["prompts"]; ok {
		p.promptLibrary(e.val, "prompts")
	}
	if e, ok := f["responses"]; ok {
		p.responseLibrary(e.val, "responses")
	}
	if e, ok := f["skills"]; ok {
		m.Skills = p.skills(e.val, "skills")
	}
	if e, ok := f["observability"]; ok {
		m.Observability = p.observability(e, "observability")
	}
	if e, ok := f["team_mode"]; ok && !empty(e.val) {
		p.teamModeTop = p.teamMode(e, "team_mode")
	}
	for _, k := range []string{"resources", "conversion", "jobs", "pool_server", "commands", "compaction"} {
		if e, ok := f[k]; ok && !empty(e.val) {
			p.warn(e.line(), k, "ignored: %s", ignoredTop[k])
		}
	}
}

// DefaultModelSpec is the model of an agent that names none in a manifest
// without default_model: the test model, so that such a manifest runs
// offline (Parse warns about every agent that uses it).
func DefaultModelSpec() ModelSpec {
	return ModelSpec{Type: ModelTest, CallAllTools: true}
}

// agentDefaultModel returns the manifest's default model for an agent
// without `model:`, warning when the manifest names none.
func (p *parser) agentDefaultModel(a *Agent, path string) ModelSpec {
	if p.defaultModel != nil {
		ms := *p.defaultModel
		return ms
	}
	p.warn(a.Line, path, "no model: using the test model (set model, or default_model for every agent)")
	ms := DefaultModelSpec()
	ms.Line = a.Line
	return ms
}

// modelVariants reads WolfHarness's `model_variants:`, a mapping of names
// to models (any form of model:); an agent's `model: NAME` (and
// default_model, and a fallback's models) is then that model. A variant
// may name an earlier one.
func (p *parser) modelVariants(n *yaml.Node, path string) {
	d := deref(n)
	if isNull(d) {
		return
	}
	if d.Kind != yaml.MappingNode {
		p.add(n.Line, path, "expected a mapping of names to models, got %s", describe(d))
		return
	}
	p.variants = map[string]ModelSpec{}
	for _, e := range p.entries(d, path) {
		name := strings.TrimSpace(e.key)
		if name == "" {
			p.add(e.line(), path, "a model variant needs a name")
			continue
		}
		p.variants[name] = p.model(e, join(path, e.key))
	}
}
