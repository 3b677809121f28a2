// The typed model maps of AgentPool (llmling-models): their type, their
// identifier and their model settings.

package config

import (
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// ModelSettings are the model settings of AgentPool's typed model maps
// that agentpool sends to the provider (the ones a provider lacks are not
// sent, as in pydantic-ai).
type ModelSettings struct {
	TopP              *float64
	Seed              *int64
	PresencePenalty   *float64
	FrequencyPenalty  *float64
	Stop              []string // stop_sequences
	ParallelToolCalls *bool
	ExtraHeaders      map[string]string
	ReasoningEffort   string // OpenAI reasoning models: low, medium, high
}

// agentPoolModelKeys are the keys of AgentPool's model maps besides
// agentpool's own.
var agentPoolModelKeys = []string{
	"identifier", "provider", "seed", "models", "pre_stream_delay",
	"top_p", "presence_penalty", "frequency_penalty", "stop_sequences", "parallel_tool_calls",
	"extra_headers", "reasoning_effort",
	// accepted, no effect on answers
	"cache_tool_definitions", "cache_instructions", "cache_messages", "prompt_cache_key",
	"prompt_cache_retention", "user", "service_tier", "metadata", "auth_method", "logprobs",
	"top_logprobs", "usage",
	// accepted, warned
	"logit_bias", "extra_body", "thinking_budget", "container", "prediction", "preset",
	"transforms", "reasoning", "safety_settings", "thinking_config", "labels",
}

// warnedModelKeys change what the model does but are not sent.
var warnedModelKeys = []string{"logit_bias", "extra_body", "thinking_budget", "container", "prediction", "preset", "transforms", "reasoning", "safety_settings", "thinking_config", "labels"}

func init() {
	provider := []string{ModelOpenAI, ModelAnthropic}
	for _, k := range agentPoolModelKeys {
		switch k {
		case "identifier", "provider", "seed", "models", "pre_stream_delay":
		default:
			modelKeyTypes[k] = provider
			providerKeys = append(providerKeys, k)
		}
	}
	modelKeyTypes["seed"] = []string{ModelTest, ModelOpenAI, ModelAnthropic}
	modelKeyTypes["pre_stream_delay"] = []string{ModelTest}
	providerKeys = append(providerKeys, "seed")
}

// modelMapType sets the type of a model map: `type:`, else `string` when
// it has an `identifier`, else AgentPool's documented {provider, model}
// form. The type string resolves the identifier; a provider name
// (openrouter, gemini, ...) is the openai type with that provider.
func (p *parser) modelMapType(ms *ModelSpec, e entry, f map[string]entry, path string) {
	te, hasType := f["type"]
	ie, hasIdent := f["identifier"]
	pe, hasProv := f["provider"]
	var typ string
	switch {
	case hasType:
		var ok bool
		if typ, ok = p.word(te.val, path+".type"); !ok {
			return
		}
	case hasIdent:
		typ = "string"
	case hasProv && deref(pe.val).Kind == yaml.ScalarNode:
		typ = strings.TrimSpace(deref(pe.val).Value)
		te = pe
	default:
		p.add(e.line(), path, "missing required field \"type\" (one of %s, or an identifier such as \"openai:gpt-4o-mini\")", strings.Join(p.modelTypes(), ", "))
		return
	}
	at, tp := te.val, path+".type"
	if !hasType && !hasIdent {
		tp = path + ".provider"
	}
	ident := func() (string, bool) {
		if !hasIdent {
			return "", false
		}
		return p.word(ie.val, path+".identifier")
	}
	switch {
	case typ == "string":
		if !hasIdent {
			p.add(e.line(), path, "missing required field \"identifier\" (for example \"openai:gpt-4o-mini\")")
			return
		}
		if _, ok := ident(); ok {
			p.modelString(ms, ie.val, path+".identifier")
		}
	case p.recognized(typ):
		ms.Type = typ
		ms.CallAllTools = typ == ModelTest // AgentPool's default: call_tools: all
		if typ == ModelInput {
			ms.Human = defaultHuman()
		}
		if id, ok := ident(); ok {
			ms.Model = strings.TrimPrefix(id, typ+":")
		}
	default:
		pr, ok := LookupProvider(typ)
		if !ok {
			p.add(at.Line, tp, "%s", p.unknownModelType(typ))
			return
		}
		ms.Type, ms.Provider = ModelOpenAI, pr.Name
		if id, ok := ident(); ok {
			ms.Model = strings.TrimPrefix(id, typ+":")
		} else if _, ok := f["model"]; !ok {
			p.add(e.line(), path, "missing required field \"identifier\" (the %s model id)", pr.Name)
		}
	}
}

// callTools reads the test model's call_tools: "all" (the default: every
// tool offered) or a list of tool names ([] calls none).
func (p *parser) callTools(ms *ModelSpec, n *yaml.Node, path string) {
	if d := deref(n); d.Kind == yaml.ScalarNode && !isNull(d) {
		if d.Value != "all" {
			p.add(n.Line, path, "expected \"all\" or a list of tool names, got %s", describe(d))
		}
		ms.CallAllTools = true
		return
	}
	ms.CallAllTools = false
	ms.CallTools = []string{}
	for i, c := range p.list(n, path) {
		ms.CallTools = append(ms.CallTools, p.toolName(c, index(path, i)))
	}
}

// modelSettings reads the model settings and the fallback models.
func (p *parser) modelSettings(ms *ModelSpec, e entry, f map[string]entry, path string) {
	st := &ms.Settings
	num := func(k string) *float64 {
		if fe, ok := f[k]; ok {
			if v, ok := p.number(fe.val, join(path, k)); ok {
				return &v
			}
		}
		return nil
	}
	st.TopP = num("top_p")
	if st.TopP != nil && (*st.TopP < 0 || *st.TopP > 1) {
		p.add(f["top_p"].val.Line, path+".top_p", "must be between 0 and 1, got %v", *st.TopP)
	}
	st.PresencePenalty = num("presence_penalty")
	st.FrequencyPenalty = num("frequency_penalty")
	for _, k := range []string{"presence_penalty", "frequency_penalty"} {
		if v := num(k); v != nil && (*v < -2 || *v > 2) {
			p.add(f[k].val.Line, join(path, k), "must be between -2 and 2, got %v", *v)
		}
	}
	if fe, ok := f["seed"]; ok && !isNull(fe.val) {
		var v int64
		if d := deref(fe.val); d.Kind != yaml.ScalarNode || d.ShortTag() != "!!int" || d.Decode(&v) != nil {
			p.add(fe.val.Line, path+".seed", "expected an integer, got %s", describe(d))
		} else {
			ms.Seed, st.Seed = int(v), &v
		}
	}
	if fe, ok := f["stop_sequences"]; ok {
		for i, c := range p.list(fe.val, path+".stop_sequences") {
			st.Stop = append(st.Stop, p.requiredStr(c, index(path+".stop_sequences", i)))
		}
	}
	if fe, ok := f["parallel_tool_calls"]; ok && !isNull(fe.val) {
		v := p.boolean(fe.val, path+".parallel_tool_calls", true)
		st.ParallelToolCalls = &v
	}
	if fe, ok := f["extra_headers"]; ok {
		st.ExtraHeaders = p.stringMap(fe.val, path+".extra_headers")
	}
	if fe, ok := f["reasoning_effort"]; ok && !isNull(fe.val) {
		st.ReasoningEffort = p.choice(f, "reasoning_effort", path, "medium", "minimal", "low", "high")
	}
	if fe, ok := f["auth_method"]; ok {
		if v, ok := p.word(fe.val, path+".auth_method"); ok && v != "api_key" {
			p.add(fe.val.Line, path+".auth_method", "auth_method %q is not supported: agentpool signs in with an API key", v)
		}
	}
	for _, k := range warnedModelKeys {
		if fe, ok := f[k]; ok && !isNull(fe.val) {
			p.warn(fe.line(), join(path, k), "ignored: agentpool does not send %s", k)
		}
	}
	if fe, ok := f["provider"]; ok && ms.Type != "" && deref(fe.val).Kind == yaml.MappingNode {
		p.warn(fe.line(), path+".provider", "ignored: agentpool does not send OpenRouter's provider preferences")
	}
	fe, ok := f["models"]
	switch {
	case ms.Type == ModelFallback && !ok:
		p.add(e.line(), path, "missing required field \"models\" (the models to try, in order)")
	case ms.Type == ModelFallback:
		items := p.list(fe.val, path+".models")
		if len(items) == 0 && deref(fe.val).Kind == yaml.SequenceNode {
			p.add(fe.val.Line, path+".models", "a fallback model needs at least one model")
		}
		for i, c := range items {
			ms.Fallback = append(ms.Fallback, p.model(entry{keyNode: c, val: c}, index(path+".models", i)))
		}
	case ok && ms.Type != "":
		p.warn(fe.line(), path+".models", "ignored: use {type: fallback, models: [...]} for models tried in order")
	}
	if ms.Type == ModelFallback {
		for _, k := range byLine(f, append(slices.Clip(modelKeys), agentPoolModelKeys...)...) {
			if k != "type" && k != "models" && p.modelKeyTypesFor(k) == nil {
				p.add(f[k].line(), join(path, k), "field %q does not apply to fallback models (set it on each model)", k)
			}
		}
	}
}

// foreignModelType reports, and returns true for, a model map whose type
// is an llmling-models type agentpool cannot build; its other keys are
// then not read (they belong to that type).
func (p *parser) foreignModelType(n *yaml.Node, path string) bool {
	tn := findKey(n, "type")
	if tn == nil || deref(tn).Kind != yaml.ScalarNode {
		return false
	}
	typ := strings.TrimSpace(deref(tn).Value)
	if why, ok := pythonModelTypes[typ]; ok {
		p.python(tn.Line, path+".type", "%s", why)
		return true
	}
	if why, ok := unsupportedModelTypes[typ]; ok {
		p.add(tn.Line, path+".type", "model type %q is not supported: %s", typ, why)
		return true
	}
	return false
}
