// Package jsonschema checks JSON values against the subset of JSON schema
// that structured outputs use: type (one or a list), properties, required,
// additionalProperties, items, prefixItems, enum, const, minimum, maximum,
// exclusiveMinimum, exclusiveMaximum, multipleOf, minLength, maxLength,
// pattern, minItems, maxItems, uniqueItems, anyOf, oneOf, allOf and local
// $ref ("#/$defs/..."). Other keywords (format, description, ...) are not
// checked. It exists because agentpool makes these schemas itself (from
// AgentPool's response types) and needs readable errors for the model, not
// a full validator.
package jsonschema

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"unicode/utf8"
)

// Schema is a parsed schema.
type Schema struct {
	root map[string]any
}

// Parse parses a JSON schema (an object).
func Parse(raw json.RawMessage) (*Schema, error) {
	var root map[string]any
	if err := json.Unmarshal(raw, &root); err != nil {
		return nil, fmt.Errorf("jsonschema: %w", err)
	}
	return &Schema{root: root}, nil
}

// Validate checks v (a value as encoding/json decodes into any) and
// returns the first problem, naming where it is ("/items/0/score: ...").
func (s *Schema) Validate(v any) error {
	if msg := s.check(s.root, v, "", 0); msg != "" {
		return fmt.Errorf("%s", msg)
	}
	return nil
}

const maxDepth = 64

func at(path string) string {
	if path == "" {
		return "the answer"
	}
	return path
}

func (s *Schema) check(sc map[string]any, v any, path string, depth int) string {
	if depth > maxDepth {
		return at(path) + ": schema nested too deeply"
	}
	if ref, ok := sc["$ref"].(string); ok {
		t := s.ref(ref)
		if t == nil {
			return at(path) + ": unknown schema reference " + ref
		}
		return s.check(t, v, path, depth+1)
	}
	if msg := s.checkType(sc, v, path); msg != "" {
		return msg
	}
	if e, ok := sc["enum"].([]any); ok && !containsValue(e, v) {
		return fmt.Sprintf("%s: %s is not one of %s", at(path), show(v), show(e))
	}
	if c, ok := sc["const"]; ok && !reflect.DeepEqual(c, v) {
		return fmt.Sprintf("%s: must be %s, got %s", at(path), show(c), show(v))
	}
	if msg := s.combinators(sc, v, path, depth); msg != "" {
		return msg
	}
	switch x := v.(type) {
	case map[string]any:
		return s.object(sc, x, path, depth)
	case []any:
		return s.array(sc, x, path, depth)
	case string:
		return checkString(sc, x, path)
	case float64:
		return checkNumber(sc, x, path)
	}
	return ""
}

func (s *Schema) ref(ref string) map[string]any {
	for _, pre := range []string{"#/$defs/", "#/definitions/"} {
		if name, ok := strings.CutPrefix(ref, pre); ok {
			defs, _ := s.root[strings.Trim(pre[1:], "/")].(map[string]any)
			t, _ := defs[name].(map[string]any)
			return t
		}
	}
	if ref == "#" {
		return s.root
	}
	return nil
}

func (s *Schema) checkType(sc map[string]any, v any, path string) string {
	var types []string
	switch t := sc["type"].(type) {
	case string:
		types = []string{t}
	case []any:
		for _, x := range t {
			if str, ok := x.(string); ok {
				types = append(types, str)
			}
		}
	default:
		return ""
	}
	got := typeName(v)
	for _, t := range types {
		if t == got || (t == "number" && got == "integer") {
			return ""
		}
	}
	return fmt.Sprintf("%s: expected %s, got %s", at(path), strings.Join(types, " or "), got)
}

func typeName(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case float64:
		if x == math.Trunc(x) && !math.IsInf(x, 0) {
			return "integer"
		}
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

func (s *Schema) combinators(sc map[string]any, v any, path string, depth int) string {
	if all, ok := sc["allOf"].([]any); ok {
		for _, a := range all {
			if t, ok := a.(map[string]any); ok {
				if msg := s.check(t, v, path, depth+1); msg != "" {
					return msg
				}
			}
		}
	}
	for _, k := range []string{"anyOf", "oneOf"} {
		alts, ok := sc[k].([]any)
		if !ok {
			continue
		}
		var msgs []string
		for _, a := range alts {
			t, _ := a.(map[string]any)
			msg := s.check(t, v, path, depth+1)
			if msg == "" {
				msgs = nil
				break
			}
			msgs = append(msgs, msg)
		}
		if len(msgs) > 0 {
			return fmt.Sprintf("%s: matches none of the allowed forms (%s)", at(path), strings.Join(msgs, "; "))
		}
	}
	return ""
}

func (s *Schema) object(sc map[string]any, v map[string]any, path string, depth int) string {
	props, _ := sc["properties"].(map[string]any)
	if req, ok := sc["required"].([]any); ok {
		for _, r := range req {
			if name, ok := r.(string); ok {
				if _, present := v[name]; !present {
					return fmt.Sprintf("%s: missing required field %q", at(path), name)
				}
			}
		}
	}
	keys := make([]string, 0, len(v))
	for k := range v {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		kp := path + "/" + k
		if ps, ok := props[k].(map[string]any); ok {
			if msg := s.check(ps, v[k], kp, depth+1); msg != "" {
				return msg
			}
			continue
		}
		switch ap := sc["additionalProperties"].(type) {
		case bool:
			if !ap {
				return fmt.Sprintf("%s: unknown field %q", at(path), k)
			}
		case map[string]any:
			if msg := s.check(ap, v[k], kp, depth+1); msg != "" {
				return msg
			}
		}
	}
	return ""
}

func (s *Schema) array(sc map[string]any, v []any, path string, depth int) string {
	if n, ok := sc["minItems"].(float64); ok && float64(len(v)) < n {
		return fmt.Sprintf("%s: needs at least %v items, got %d", at(path), n, len(v))
	}
	if n, ok := sc["maxItems"].(float64); ok && float64(len(v)) > n {
		return fmt.Sprintf("%s: allows at most %v items, got %d", at(path), n, len(v))
	}
	prefix, _ := sc["prefixItems"].([]any)
	items, _ := sc["items"].(map[string]any)
	for i, x := range v {
		var t map[string]any
		if i < len(prefix) {
			t, _ = prefix[i].(map[string]any)
		} else {
			t = items
		}
		if t == nil {
			continue
		}
		if msg := s.check(t, x, fmt.Sprintf("%s/%d", path, i), depth+1); msg != "" {
			return msg
		}
	}
	if u, _ := sc["uniqueItems"].(bool); u {
		for i := range v {
			for j := i + 1; j < len(v); j++ {
				if reflect.DeepEqual(v[i], v[j]) {
					return fmt.Sprintf("%s: items %d and %d are equal (they must be unique)", at(path), i, j)
				}
			}
		}
	}
	return ""
}

func checkString(sc map[string]any, v, path string) string {
	n := float64(utf8.RuneCountInString(v))
	if m, ok := sc["minLength"].(float64); ok && n < m {
		return fmt.Sprintf("%s: needs at least %v characters, got %v", at(path), m, n)
	}
	if m, ok := sc["maxLength"].(float64); ok && n > m {
		return fmt.Sprintf("%s: allows at most %v characters, got %v", at(path), m, n)
	}
	if p, ok := sc["pattern"].(string); ok {
		re, err := regexp.Compile(p)
		if err == nil && !re.MatchString(v) {
			return fmt.Sprintf("%s: %s does not match the pattern %s", at(path), show(v), p)
		}
	}
	return ""
}

func checkNumber(sc map[string]any, v float64, path string) string {
	bound := func(key, rel string, fails func(b float64) bool) string {
		if b, ok := sc[key].(float64); ok && fails(b) {
			return fmt.Sprintf("%s: must be %s %v, got %v", at(path), rel, b, v)
		}
		return ""
	}
	for _, msg := range []string{
		bound("minimum", ">=", func(b float64) bool { return v < b }),
		bound("maximum", "<=", func(b float64) bool { return v > b }),
		bound("exclusiveMinimum", ">", func(b float64) bool { return v <= b }),
		bound("exclusiveMaximum", "<", func(b float64) bool { return v >= b }),
		bound("multipleOf", "a multiple of", func(b float64) bool { return b != 0 && math.Abs(math.Remainder(v, b)) > 1e-9 }),
	} {
		if msg != "" {
			return msg
		}
	}
	return ""
}

func containsValue(list []any, v any) bool {
	for _, x := range list {
		if reflect.DeepEqual(x, v) {
			return true
		}
	}
	return false
}

func show(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	if len(b) > 200 {
		return string(b[:200]) + "..."
	}
	return string(b)
}
