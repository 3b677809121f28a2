// Parsing of model specs, in their string and map forms, and of scripted turns.

package config

import (
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

func (p *parser) model(e entry, path string) ModelSpec {
	ms := ModelSpec{Line: e.line()}
	d := deref(e.val)
	switch {
	case isNull(d):
		p.add(e.line(), path, "must not be empty (for example \"test\" or \"openai:gpt-4o-mini\")")
	case d.Kind == yaml.ScalarNode:
		if v, ok := p.variants[strings.TrimSpace(d.Value)]; ok {
			// WolfHarness resolves a name of model_variants before any
			// other reading of the string.
			v.Line = e.line()
			return v
		}
		p.modelString(&ms, e.val, path)
	case d.Kind == yaml.MappingNode:
		p.modelMap(&ms, e, path)
	default:
		p.add(e.val.Line, path, "expected a model name or a mapping, got %s", describe(d))
	}
	p.checkWired(ms, path)
	return ms
}

func (p *parser) unknownModelType(t string) string {
	known := p.modelTypes()
	if s := suggest(t, known); s != "" {
		return "unknown model type " + strconv.Quote(t) + s
	}
	return "unknown model type " + strconv.Quote(t) + " (known: " + strings.Join(known, ", ") + ")"
}

// modelString parses "test", "openai:MODEL", "anthropic:MODEL", for a
// registered type "TYPE" or "TYPE:MODEL", and AgentPool's ids:
// "PROVIDER:MODEL" and bare ids such as "gpt-4o-mini" (see modelID).
func (p *parser) modelString(ms *ModelSpec, n *yaml.Node, path string) {
	s := strings.TrimSpace(deref(n).Value)
	typ, id, hasID := strings.Cut(s, ":")
	if typ == "openai-chat" && hasID {
		// pydantic-ai's name of OpenAI's chat completions API, which
		// WolfHarness's manifests write; "openai:" means the same.
		typ = ModelOpenAI
	}
	switch typ {
	case ModelTest:
		// AgentPool's "test:TEXT" is the test model answering TEXT.
		ms.Type, ms.CallAllTools = typ, true
		if hasID {
			if id == "" {
				p.add(n.Line, path, "missing answer after \"test:\": write \"test\" or \"test:TEXT\" (the test model answering TEXT)")
				return
			}
			ms.CustomOutputText = id
		}
	case ModelInput:
		if hasID {
			p.add(n.Line, path, "the input model takes no model id: write \"input\" (a person answers each turn)")
			return
		}
		ms.Type, ms.Human = typ, defaultHuman()
	case ModelScripted:
		p.add(n.Line, path, "a scripted model needs turns: use the mapping form {type: scripted, turns: [...]}")
	case ModelFallback:
		p.add(n.Line, path, "a fallback model needs models: use the mapping form {type: fallback, models: [...]}")
	case ModelOpenAI, ModelAnthropic:
		if strings.TrimSpace(id) == "" {
			p.add(n.Line, path, "missing model id: write \"%s:MODEL\", e.g. %q", typ, typ+":"+exampleModel(typ))
			return
		}
		ms.Type, ms.Model = typ, strings.TrimSpace(id)
	default:
		if p.registered(typ) {
			ms.Type, ms.Model = typ, strings.TrimSpace(id)
			return
		}
		if p.modelID(ms, s, n, path) {
			return
		}
		p.add(n.Line, path, "%s", p.unknownModel(s))
	}
}

func exampleModel(typ string) string {
	if typ == ModelAnthropic {
		return "claude-3-5-haiku-latest"
	}
	return "gpt-4o-mini"
}

func (p *parser) modelMap(ms *ModelSpec, e entry, path string) {
	if p.foreignModelType(e.val, path) {
		return
	}
	keys := append(slices.Clip(modelKeys), agentPoolModelKeys...)
	f, _ := p.object(e.val, path, keys)
	p.modelMapType(ms, e, f, path)
	// keys that do not apply to the type
	if ms.Type != "" {
		for _, k := range keys {
			fe, ok := f[k]
			if types := p.modelKeyTypesFor(k); ok && types != nil && !contains(types, ms.Type) {
				p.add(fe.line(), join(path, k), "field %q does not apply to %s models (only to %s)", k, ms.Type, andList(types))
			}
		}
	}
	get := func(k string) (*yaml.Node, string, bool) {
		fe, ok := f[k]
		return fe.val, join(path, k), ok
	}
	if n, fp, ok := get("model"); ok {
		ms.Model = p.requiredStr(n, fp)
	} else if (ms.Type == ModelOpenAI || ms.Type == ModelAnthropic) && ms.Model == "" && f["identifier"].val == nil {
		p.add(e.line(), path, "missing required field \"model\" (the %s model id, e.g. %q)", ms.Type, exampleModel(ms.Type))
	}
	if n, fp, ok := get("base_url"); ok {
		ms.BaseURL = p.str(n, fp)
		// Checked only where the key applies (else that is the error).
		if ms.BaseURL != "" && contains(p.modelKeyTypesFor("base_url"), ms.Type) {
			if !isHTTPURL(ms.BaseURL) {
				p.add(n.Line, fp, "expected an http:// or https:// URL with a host, such as %q, got %q", "http://127.0.0.1:11434/v1", ms.BaseURL)
			} else if problem := baseURLQueryProblem(ms.BaseURL); problem != "" {
				p.add(n.Line, fp, "%s", problem)
			}
		}
	}
	if n, fp, ok := get("api_key"); ok {
		ms.APIKey = p.str(n, fp)
	}
	if n, fp, ok := get("api_key_env"); ok {
		ms.APIKeyEnv = p.str(n, fp)
		if ms.APIKey != "" && ms.APIKeyEnv != "" {
			p.add(n.Line, fp, "set either api_key or api_key_env, not both")
		}
	}
	if n, fp, ok := get("temperature"); ok {
		if v, ok := p.number(n, fp); ok {
			if v < 0 || v > 2 {
				p.add(n.Line, fp, "must be between 0 and 2, got %v", v)
			} else {
				ms.Temperature = &v
			}
		}
	}
	if n, fp, ok := get("max_tokens"); ok {
		ms.MaxTokens = p.count(n, fp)
	}
	if n, fp, ok := get("max_response_bytes"); ok {
		ms.MaxResponseBytes = p.count(n, fp)
	}
	if n, fp, ok := get("context_window"); ok {
		ms.ContextWindow = p.positive(n, fp)
	}
	if n, fp, ok := get("compact_threshold"); ok {
		if v, ok := p.number(n, fp); ok {
			if v <= 0 || v > 1 {
				p.add(n.Line, fp, "must be greater than 0 and at most 1 (the share of the context window a request may fill before older turns are summarised; default 0.8), got %v", v)
			} else {
				ms.CompactThreshold = v
			}
		}
	}
	if n, fp, ok := get("timeout"); ok {
		ms.Timeout = p.seconds(n, fp)
	}
	if n, fp, ok := get("input_price"); ok {
		ms.InputPrice = p.price(n, fp)
	}
	if n, fp, ok := get("output_price"); ok {
		ms.OutputPrice = p.price(n, fp)
	}
	(compatKeys{p}).humanKeys(ms, get)
	if n, fp, ok := get("custom_output_text"); ok {
		ms.CustomOutputText = p.str(n, fp)
	}
	if n, fp, ok := get("call_tools"); ok {
		p.callTools(ms, n, fp)
	}
	if n, fp, ok := get("tool_args"); ok {
		if d := deref(n); !isNull(d) && d.Kind != yaml.MappingNode {
			p.add(n.Line, fp, "expected a mapping of tool names to arguments, got %s", describe(d))
		} else {
			ms.ToolArgs = map[string]map[string]any{}
			for _, ae := range p.entries(n, fp) {
				ap := join(fp, ae.key)
				if !ms.CallAllTools && !contains(ms.CallTools, ae.key) {
					p.add(ae.line(), ap, "tool %q is not listed in call_tools%s", ae.key, suggest(ae.key, ms.CallTools))
				}
				ms.ToolArgs[ae.key] = p.args(ae.val, ap)
			}
		}
	}
	if n, fp, ok := get("turns"); ok {
		items := p.list(n, fp)
		for i, c := range items {
			ms.Turns = append(ms.Turns, p.turn(c, index(fp, i)))
		}
		if len(items) == 0 && ms.Type == ModelScripted && (isNull(n) || deref(n).Kind == yaml.SequenceNode) {
			p.add(n.Line, fp, "at least one turn is required")
		}
	} else if ms.Type == ModelScripted {
		p.add(e.line(), path, "missing required field \"turns\" (the responses of the scripted model, in order)")
	}
	if n, fp, ok := get("delay"); ok {
		ms.Delay = p.duration(n, fp)
	}
	if n, fp, ok := get("pre_stream_delay"); ok {
		ms.PreStreamDelay = p.seconds(n, fp)
	}
	p.modelSettings(ms, e, f, path)
}

// toolName reads a non-empty tool name.
func (p *parser) toolName(n *yaml.Node, path string) string {
	d := deref(n)
	if d.Kind != yaml.ScalarNode || isNull(d) || strings.TrimSpace(d.Value) == "" {
		p.add(n.Line, path, "expected a non-empty tool name, got %s", describe(d))
		return ""
	}
	return d.Value
}

// turn reads a scripted turn: a mapping, or a string (shorthand for text).
func (p *parser) turn(n *yaml.Node, path string) ScriptTurn {
	var t ScriptTurn
	if d := deref(n); d.Kind == yaml.ScalarNode && !isNull(d) {
		t.Text = d.Value
		return t
	}
	f, ok := p.object(n, path, turnKeys)
	if !ok {
		return t
	}
	if isNull(n) {
		p.add(n.Line, path, "empty turn: set text, thinking, tool_calls or error")
		return t
	}
	if fe, ok := f["text"]; ok {
		t.Text = p.str(fe.val, path+".text")
	}
	if fe, ok := f["thinking"]; ok {
		t.Thinking = p.str(fe.val, path+".thinking")
	}
	if fe, ok := f["tool_calls"]; ok {
		fp := path + ".tool_calls"
		for i, c := range p.list(fe.val, fp) {
			cp := index(fp, i)
			cf, ok := p.object(c, cp, callKeys)
			if !ok {
				continue
			}
			var call ScriptToolCall
			if ne, ok := cf["name"]; ok {
				call.Name = p.toolName(ne.val, cp+".name")
			} else {
				p.add(c.Line, cp, "missing required field \"name\"")
			}
			if ae, ok := cf["args"]; ok {
				call.Args = p.args(ae.val, cp+".args")
			} else {
				call.Args = map[string]any{}
			}
			t.ToolCalls = append(t.ToolCalls, call)
		}
	}
	if fe, ok := f["error"]; ok {
		t.Error = p.requiredStr(fe.val, path+".error")
	}
	if fe, ok := f["delay"]; ok {
		t.Delay = p.duration(fe.val, path+".delay")
	}
	if fe, ok := f["finish_reason"]; ok {
		t.FinishReason = p.requiredStr(fe.val, path+".finish_reason")
	}
	return t
}

// isHTTPURL reports whether s is an absolute http or https URL with a host:
// what a provider's base URL must be ("localhost:11434/v1" parses as a URL
// of scheme "localhost", and would only fail at the first request).
func isHTTPURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" && u.Opaque == ""
}

// baseURLQueryProblem says what is wrong with the query or fragment of an
// http(s) base URL, or "". The query is sent with every request (Azure's
// "?api-version=..."), so it must parse as it is written; a fragment is
// never sent.
func baseURLQueryProblem(s string) string {
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return ""
	case u.Fragment != "":
		return fmt.Sprintf("a fragment (#%s) is never sent to the server; remove it from %q", u.Fragment, s)
	}
	if _, err := url.ParseQuery(u.RawQuery); err != nil {
		return fmt.Sprintf("bad query in %q: %v (the query is sent with every request, as written)", s, err)
	}
	return ""
}
