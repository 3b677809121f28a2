// Structured output: AgentPool's `responses:` (named response types) and
// an agent's `output_type:` (a name, or an inline response type), turned
// into the JSON schema the agent's final answer must satisfy.

package config

import (
	"encoding/json"
	"maps"
	"regexp"
	"slices"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"
)

// OutputSpec is the structured output of an agent: its final answer must
// be a JSON value that satisfies Schema. The model is asked for it in the
// provider's structured-output mode; an answer that does not satisfy it
// is sent back with the problem, up to Retries times.
type OutputSpec struct {
	// Name names the schema for the provider (the `responses:` key, or
	// result_tool_name, else "final_result").
	Name        string
	Description string
	// Schema is a JSON schema (the subset agentpool validates: type,
	// properties, required, items, additionalProperties, enum, const,
	// numeric and length bounds, pattern, anyOf).
	Schema json.RawMessage
	// Retries is output_retries: how many more answers are asked for after
	// one that does not match (default 1, as in AgentPool).
	Retries int
	Line    int
}

// DefaultOutputRetries is the default of output_retries.
const DefaultOutputRetries = 1

var (
	responseKeys = []string{"response_schema", "description", "result_tool_name", "result_tool_description", "output_retries"}
	schemaKeys   = []string{"type", "description", "fields", "import_path", "schema"}
	fieldKeys    = []string{
		"type", "description", "values", "default", "title", "pattern", "min_length", "max_length",
		"gt", "ge", "lt", "le", "multiple_of", "literal_value", "examples", "optional",
		"json_schema_extra", "field_config", "dependent_required", "dependent_schema", "constraints",
	}
	constraintKeys = []string{"enum", "gt", "ge", "lt", "le", "multiple_of", "min_length", "max_length", "pattern", "min_items", "max_items", "unique_items"}
	// Compiled on first use, not at package init, which every process
	// linking the package pays (agentpool version too).
	schemaNameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`[^A-Za-z0-9_-]+`) })
)

// responseLibrary reads `responses:`.
func (p *parser) responseLibrary(n *yaml.Node, path string) {
	p.responses = map[string]*OutputSpec{}
	if d := deref(n); !isNull(d) && d.Kind != yaml.MappingNode {
		p.add(n.Line, path, "expected a mapping of response names to response types, got %s", describe(d))
		return
	}
	for _, e := range p.entries(n, path) {
		if o := p.response(e.val, join(path, e.key), e.key); o != nil {
			p.responses[e.key] = o
		}
	}
}

// outputType reads an agent's output_type: a name from `responses:` or an
// inline response type.
func (p *parser) outputType(n *yaml.Node, path string) *OutputSpec {
	if d := deref(n); d.Kind == yaml.ScalarNode {
		name, ok := p.word(n, path)
		if !ok {
			return nil
		}
		o, found := p.responses[name]
		if !found {
			p.add(n.Line, path, "unknown response type %q%s (define it under responses:)", name, suggest(name, slices.Sorted(maps.Keys(p.responses))))
			return nil
		}
		c := *o
		c.Line = n.Line
		return &c
	}
	return p.response(n, path, "")
}

// response reads one response type ({response_schema, description,
// result_tool_name, result_tool_description, output_retries}).
func (p *parser) response(n *yaml.Node, path, name string) *OutputSpec {
	f, ok := p.object(n, path, responseKeys)
	if !ok {
		return nil
	}
	o := &OutputSpec{Name: name, Retries: DefaultOutputRetries, Line: n.Line}
	if e, ok := f["result_tool_name"]; ok && name == "" {
		o.Name = p.str(e.val, path+".result_tool_name")
	}
	if o.Name = strings.Trim(schemaNameRE().ReplaceAllString(o.Name, "_"), "_"); o.Name == "" {
		o.Name = "final_result"
	}
	for _, k := range []string{"result_tool_description", "description"} {
		if e, ok := f[k]; ok {
			o.Description = p.str(e.val, join(path, k))
		}
	}
	if e, ok := f["output_retries"]; ok && !isNull(e.val) {
		o.Retries = p.count(e.val, path+".output_retries")
	}
	se, ok := f["response_schema"]
	if !ok {
		p.add(n.Line, path, "missing required field \"response_schema\"")
		return nil
	}
	schema, desc := p.responseSchema(se.val, path+".response_schema")
	if schema == nil {
		return nil
	}
	if o.Description == "" {
		o.Description = desc
	}
	b, err := json.Marshal(schema)
	if err != nil {
		p.add(se.val.Line, path+".response_schema", "cannot encode the schema: %v", err)
		return nil
	}
	o.Schema = b
	return o
}

// responseSchema reads a response schema: inline fields (AgentPool's
// form), or `type: json_schema` with a JSON schema under `schema:`
// (agentpool's). Python classes (`type: import`) cannot be read.
func (p *parser) responseSchema(n *yaml.Node, path string) (map[string]any, string) {
	f, ok := p.object(n, path, schemaKeys)
	if !ok {
		return nil, ""
	}
	typ := "inline"
	if e, ok := f["type"]; ok {
		typ, _ = p.word(e.val, path+".type")
	}
	desc := ""
	if e, ok := f["description"]; ok {
		desc = p.str(e.val, path+".description")
	}
	switch typ {
	case "import":
		at := n
		if e, ok := f["import_path"]; ok {
			at = e.val
		}
		p.python(at.Line, path, "response type %s is a Python import path", describe(at))
		return nil, ""
	case "json_schema":
		e, ok := f["schema"]
		if !ok {
			p.add(n.Line, path, "missing required field \"schema\" (a JSON schema)")
			return nil, ""
		}
		s, _ := p.value(e.val, path+".schema").(map[string]any)
		if s == nil {
			p.add(e.val.Line, path+".schema", "expected a JSON schema (a mapping), got %s", describe(e.val))
		}
		return s, desc
	case "inline":
	default:
		p.add(f["type"].val.Line, path+".type", "unknown response schema type %q (inline, json_schema or import)", typ)
		return nil, ""
	}
	fe, ok := f["fields"]
	if !ok {
		p.add(n.Line, path, "missing required field \"fields\"")
		return nil, ""
	}
	schema := map[string]any{"type": "object"}
	if desc != "" {
		schema["description"] = desc
	}
	props := map[string]any{}
	required := []string{}
	if d := deref(fe.val); d.Kind != yaml.MappingNode {
		p.add(fe.val.Line, path+".fields", "expected a mapping of field names to fields, got %s", describe(d))
		return nil, ""
	}
	for _, e := range p.entries(fe.val, path+".fields") {
		prop, req := p.schemaField(e.val, join(path+".fields", e.key))
		if prop == nil {
			continue
		}
		props[e.key] = prop
		if req {
			required = append(required, e.key)
		}
	}
	schema["properties"] = props
	schema["required"] = required
	return schema, desc
}

// schemaField reads one field of an inline schema; req reports whether it
// is required (not optional and without a default).
func (p *parser) schemaField(n *yaml.Node, path string) (prop map[string]any, req bool) {
	if d := deref(n); d.Kind == yaml.ScalarNode && !isNull(d) {
		s, err := pythonType(d.Value) // shorthand: the type
		if err != "" {
			p.add(n.Line, path, "%s", err)
			return nil, false
		}
		return s, true
	}
	f, ok := p.object(n, path, fieldKeys)
	if !ok {
		return nil, false
	}
	te, ok := f["type"]
	if !ok {
		p.add(n.Line, path, "missing required field \"type\" (str, int, float, bool, list[str], dict[str, float], ...)")
		return nil, false
	}
	ts, ok := p.word(te.val, path+".type")
	if !ok {
		return nil, false
	}
	prop, err := pythonType(ts)
	if err != "" {
		p.add(te.val.Line, path+".type", "%s", err)
		return nil, false
	}
	req = true
	for _, k := range []string{"description", "title", "pattern"} {
		if e, ok := f[k]; ok && !isNull(e.val) {
			prop[k] = p.str(e.val, join(path, k))
		}
	}
	if e, ok := f["optional"]; ok && p.boolean(e.val, path+".optional", false) {
		req = false
		prop = map[string]any{"anyOf": []any{prop, map[string]any{"type": "null"}}}
	}
	if e, ok := f["default"]; ok {
		req = false
		prop["default"] = p.value(e.val, path+".default")
	}
	if e, ok := f["values"]; ok && !isNull(e.val) {
		prop["enum"] = p.value(e.val, path+".values")
	}
	if e, ok := f["literal_value"]; ok && !isNull(e.val) {
		prop["const"] = p.value(e.val, path+".literal_value")
	}
	if e, ok := f["examples"]; ok && !isNull(e.val) {
		prop["examples"] = p.value(e.val, path+".examples")
	}
	p.constraints(prop, f, path)
	if e, ok := f["constraints"]; ok {
		cf, _ := p.object(e.val, path+".constraints", constraintKeys)
		p.constraints(prop, cf, path+".constraints")
	}
	if e, ok := f["json_schema_extra"]; ok && !isNull(e.val) {
		if extra, ok := p.value(e.val, path+".json_schema_extra").(map[string]any); ok {
			maps.Copy(prop, extra)
		}
	}
	for _, k := range []string{"field_config", "dependent_required", "dependent_schema"} {
		if e, ok := f[k]; ok && !empty(e.val) {
			p.warn(e.line(), join(path, k), "ignored: agentpool validates the field's type and constraints only")
		}
	}
	return prop, req
}

// constraints copies pydantic-style constraints into a property schema;
// lengths bound strings, or the items of a list.
func (p *parser) constraints(prop map[string]any, f map[string]entry, path string) {
	isArray := prop["type"] == "array"
	names := map[string]string{"gt": "exclusiveMinimum", "ge": "minimum", "lt": "exclusiveMaximum", "le": "maximum", "multiple_of": "multipleOf"}
	for k, js := range names {
		if e, ok := f[k]; ok && !isNull(e.val) {
			if v, ok := p.number(e.val, join(path, k)); ok {
				prop[js] = v
			}
		}
	}
	lengths := map[string][2]string{"min_length": {"minLength", "minItems"}, "max_length": {"maxLength", "maxItems"}, "min_items": {"minItems", "minItems"}, "max_items": {"maxItems", "maxItems"}}
	for k, js := range lengths {
		if e, ok := f[k]; ok && !isNull(e.val) {
			key := js[0]
			if isArray {
				key = js[1]
			}
			prop[key] = p.count(e.val, join(path, k))
		}
	}
	if e, ok := f["pattern"]; ok && !isNull(e.val) {
		pat := p.str(e.val, path+".pattern")
		if _, err := regexp.Compile(pat); err != nil {
			p.add(e.val.Line, path+".pattern", "invalid pattern %q: %v", pat, err)
		}
		prop["pattern"] = pat
	}
	if e, ok := f["enum"]; ok && !isNull(e.val) {
		if d := deref(e.val); d.Kind != yaml.SequenceNode {
			p.add(e.val.Line, path+".enum", "expected a list of values, got %s", describe(d))
		} else {
			prop["enum"] = p.value(e.val, path+".enum")
		}
	}
	if e, ok := f["unique_items"]; ok && p.boolean(e.val, path+".unique_items", false) {
		prop["uniqueItems"] = true
	}
}
