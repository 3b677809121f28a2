// llmling-agent's agent keys (AgentPool's predecessor, whose manifests
// are still published): the ones with a meaning here are read as
// AgentPool's, the ones that change nothing are warned about.

package config

import (
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// llmlingAgentKeys are llmling-agent's agent keys that agentpool reads
// (llmlingKeys turns them into AgentPool's or drops them).
var llmlingAgentKeys = []string{"system_prompts", "result_type", "user_prompts", "provider", "capabilities"}

// llmlingRenamed are llmling-agent's names of AgentPool's keys.
var llmlingRenamed = map[string]string{
	"system_prompts": "system_prompt",
	"result_type":    "output_type",
}

// llmlingKeys reads llmling-agent's keys of the agent at path in f, before
// its inheritance is resolved: the renamed ones become AgentPool's (both
// spellings at once is an error), user_prompts are warned about,
// provider: human is the input model, and WolfHarness's list of
// capabilities is refused (llmling-agent's mapping stays, for
// capabilityToolsets).
func (o compatKeys) llmlingKeys(f map[string]entry, path string) {
	p := o.p
	for _, old := range []string{"system_prompts", "result_type"} {
		e, ok := f[old]
		if !ok {
			continue
		}
		delete(f, old)
		now := llmlingRenamed[old]
		if first, both := f[now]; both {
			p.add(e.line(), join(path, old), "%s is llmling-agent's name of %s, which is set too (line %s): keep one", old, now, p.lineRef(first.line()))
			continue
		}
		e.key = now
		f[now] = e
	}
	if e, ok := f["user_prompts"]; ok {
		delete(f, "user_prompts")
		if !empty(e.val) {
			p.warn(e.line(), join(path, "user_prompts"), "ignored: user_prompts are llmling-agent's example prompts for its UI; pass the prompt to agentpool run")
		}
	}
	if e, ok := f["provider"]; ok {
		delete(f, "provider")
		(compatKeys{p}).agentProvider(f, e, join(path, "provider"))
	}
	if e, ok := f["capabilities"]; ok {
		if d := deref(e.val); d.Kind != yaml.MappingNode && !isNull(d) {
			delete(f, "capabilities")
			p.add(e.line(), join(path, "capabilities"), "%s", capabilitiesMessage(e.val))
		}
	}
}

// agentProvider reads llmling-agent's agent provider, a name or {type,
// ...}: pydantic_ai is its default (a model answers; its `model` is the
// agent's), human is AgentPool's input model, callback is Python.
func (o compatKeys) agentProvider(f map[string]entry, e entry, path string) {
	p := o.p
	typ, tn, model := e.val, path, (*yaml.Node)(nil)
	var ignored []string
	if d := deref(e.val); d.Kind == yaml.MappingNode {
		tn = path + ".type"
		if typ = findKey(d, "type"); typ == nil {
			p.add(e.line(), path, "missing required field \"type\" (llmling-agent's provider: pydantic_ai, human or callback)")
			return
		}
		for _, pe := range p.entries(d, path) {
			switch pe.key {
			case "type":
			case "model":
				model = pe.val
			default:
				ignored = append(ignored, pe.key)
			}
		}
	}
	v, ok := p.word(typ, tn)
	if !ok {
		return
	}
	setModel := func(n *yaml.Node, what string) {
		if m, set := f["model"]; set {
			p.add(e.line(), path, "%s and model (line %s) are both set: keep one", what, p.lineRef(m.line()))
			return
		}
		f["model"] = entry{key: "model", keyNode: e.keyNode, val: n}
	}
	switch v {
	case "pydantic_ai":
		if model != nil {
			setModel(model, "the provider's model")
		}
	case "human":
		setModel(&yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: ModelInput, Line: typ.Line, Column: typ.Column},
			"provider: human (a person answers, model: input here)")
	case "callback":
		p.python(typ.Line, tn, "llmling-agent's callback provider calls a Python function")
		return
	default:
		p.add(typ.Line, tn, "provider %q (llmling-agent's agent provider) was replaced in AgentPool by type and model: remove it and set model (pydantic_ai is a model, human is model: input)", v)
		return
	}
	if len(ignored) > 0 {
		why := "the model mapping takes model settings: model: {type: string, identifier: ..., temperature: 0.7}"
		if v == "human" {
			why = "agentpool waits until the person answers or the run is cancelled"
		}
		p.warn(e.line(), path, "ignored: %s of llmling-agent's %s provider (%s)", strings.Join(ignored, ", "), v, why)
	}
}

// llmlingCapabilities maps llmling-agent's can_* flags that have agentpool
// tools onto toolsets; readOnly: file_access without Write and Edit.
var llmlingCapabilities = map[string]string{
	"can_list_agents":      ToolsetSubagent,
	"can_list_teams":       ToolsetSubagent,
	"can_delegate_tasks":   ToolsetSubagent,
	"can_ask_agents":       ToolsetSubagent,
	"can_read_files":       ToolsetFileAccess,
	"can_list_directories": ToolsetFileAccess,
	"can_execute_commands": ToolsetExecution,
	"can_manage_processes": ToolsetExecution,
}

// llmlingSkipped are llmling-agent's capabilities without agentpool tools,
// and what they did.
var llmlingSkipped = map[string]string{
	"can_observe_agents":   "watches other agents' runs",
	"can_load_resources":   "reads llmling resources, which agentpool does not use",
	"can_list_resources":   "lists llmling resources, which agentpool does not use",
	"can_register_tools":   "registers Python functions as tools",
	"can_register_code":    "makes tools from Python code",
	"can_install_packages": "installs Python packages",
	"can_chain_tools":      "chains tools in Python",
	"can_execute_code":     "runs Python code",
	"can_create_workers":   "adds workers, and the pool is fixed when built",
	"can_create_delegates": "adds agents, and the pool is fixed when built",
	"can_add_agents":       "adds agents, and the pool is fixed when built",
	"can_add_teams":        "adds teams, and the pool is fixed when built",
	"can_connect_nodes":    "adds connections, and the pool is fixed when built",
	"can_add_mcp_servers":  "adds MCP servers, and the pool is fixed when built",
	"can_ask_user":         "asks the user a question mid-run, and agentpool asks a person only to approve a tool",
	"history_access":       "searches the conversation history; see agentpool sessions",
}

// capabilityToolsets adds to l the toolsets of llmling-agent's
// capabilities mapping n; a capability without agentpool tools is warned
// about. A toolset the agent lists itself keeps its own configuration.
func (o compatKeys) capabilityToolsets(n *yaml.Node, path string, l *toolsetList) {
	p := o.p
	known := slices.Sorted(func(yield func(string) bool) {
		for k := range llmlingCapabilities {
			if !yield(k) {
				return
			}
		}
		for k := range llmlingSkipped {
			if !yield(k) {
				return
			}
		}
	})
	var skipped []string
	skippedLine := 0
	for _, e := range p.entries(n, path) {
		ep := join(path, e.key)
		on := false
		switch {
		case e.key == "history_access":
			if v, ok := p.word(e.val, ep); ok {
				if !contains([]string{"none", "own", "all"}, v) {
					p.add(e.val.Line, ep, "unknown history access %q (none, own or all)", v)
				}
				on = v == "own" || v == "all"
			}
		case contains(known, e.key):
			on = p.boolean(e.val, ep, false)
		default:
			p.add(e.line(), ep, "unknown capability %q%s", e.key, orKnown(e.key, known))
			continue
		}
		if !on {
			continue
		}
		if why, ok := llmlingSkipped[e.key]; ok {
			skipped = append(skipped, e.key+" ("+why+")")
			if skippedLine == 0 {
				skippedLine = e.line()
			}
			continue
		}
		typ := llmlingCapabilities[e.key]
		if slices.ContainsFunc(l.out, func(t ToolsetSpec) bool { return t.Type == typ }) {
			continue
		}
		ts := ToolsetSpec{Type: typ, Line: e.line()}
		if typ == ToolsetFileAccess {
			ts.Disabled = []string{"Write", "Edit"} // llmling-agent's file capabilities read
		}
		l.out = append(l.out, ts)
	}
	if len(skipped) > 0 {
		p.warn(skippedLine, path, "skipped: llmling-agent's %s; agentpool has no such tools, and the agent runs without them", strings.Join(skipped, ", "))
	}
}
