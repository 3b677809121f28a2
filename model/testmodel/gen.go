package testmodel

import (
	"encoding/json"
	"sort"
	"strings"
	"time"
)

// Generate returns a JSON value that satisfies schema (the subset of JSON
// schema that tool parameters and structured outputs use), made
// deterministically from seed the way AgentPool's test model (pydantic-ai's
// TestModel) makes the arguments of the tools it calls: every property
// present, strings "a", "b", ... by seed, numbers at their lower bound
// plus seed, the enum value at seed, one item per list. A schema it
// cannot read gives "a".
func Generate(schema json.RawMessage, seed int) any {
	var s map[string]any
	if json.Unmarshal(schema, &s) != nil {
		return map[string]any{}
	}
	g := &generator{seed: seed, root: s}
	return g.any(s, 0)
}

type generator struct {
	seed int
	root map[string]any
}

// maxDepth stops recursive schemas.
const maxDepth = 16

func (g *generator) any(s map[string]any, depth int) any {
	if depth > maxDepth {
		return nil
	}
	if c, ok := s["const"]; ok {
		return c
	}
	if e, ok := s["enum"].([]any); ok && len(e) > 0 {
		return e[g.seed%len(e)]
	}
	if e, ok := s["examples"].([]any); ok && len(e) > 0 {
		return e[g.seed%len(e)]
	}
	if ref, ok := s["$ref"].(string); ok {
		if t := g.ref(ref); t != nil {
			return g.any(t, depth+1)
		}
		return g.char()
	}
	for _, k := range []string{"anyOf", "oneOf"} {
		if alts, ok := s[k].([]any); ok && len(alts) > 0 {
			alt, _ := alts[g.seed%len(alts)].(map[string]any)
			return g.any(alt, depth+1)
		}
	}
	if all, ok := s["allOf"].([]any); ok && len(all) > 0 {
		alt, _ := all[0].(map[string]any)
		return g.any(alt, depth+1)
	}
	switch typeOf(s) {
	case "object":
		return g.object(s, depth)
	case "array":
		return g.array(s, depth)
	case "string":
		return g.str(s)
	case "integer":
		return int64(g.int(s))
	case "number":
		return float64(g.int(s))
	case "boolean":
		return g.seed%2 == 1
	case "null":
		return nil
	}
	return g.char()
}

// typeOf returns the schema's type; of a list of types, the first that
// is not null.
func typeOf(s map[string]any) string {
	switch t := s["type"].(type) {
	case string:
		return t
	case []any:
		for _, x := range t {
			if str, ok := x.(string); ok && str != "null" {
				return str
			}
		}
	}
	if _, ok := s["properties"]; ok {
		return "object"
	}
	return ""
}

func (g *generator) ref(ref string) map[string]any {
	for _, pre := range []string{"#/$defs/", "#/definitions/"} {
		if name, ok := strings.CutPrefix(ref, pre); ok {
			defs, _ := g.root[strings.Trim(pre[1:], "/")].(map[string]any)
			t, _ := defs[name].(map[string]any)
			return t
		}
	}
	return nil
}

func (g *generator) object(s map[string]any, depth int) map[string]any {
	out := map[string]any{}
	props, _ := s["properties"].(map[string]any)
	names := make([]string, 0, len(props))
	for k := range props {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		ps, _ := props[k].(map[string]any)
		out[k] = g.any(ps, depth+1)
	}
	switch ap := s["additionalProperties"].(type) {
	case bool:
		if ap {
			out[g.extraKey(out)] = g.char()
		}
	case map[string]any:
		out[g.extraKey(out)] = g.any(ap, depth+1)
	}
	return out
}

func (g *generator) extraKey(out map[string]any) string {
	k := "additionalProperty"
	for out[k] != nil {
		k += "_"
	}
	return k
}

func (g *generator) array(s map[string]any, depth int) []any {
	items, _ := s["items"].(map[string]any)
	n := 0
	if items != nil {
		n = 1
	}
	if mi, ok := number(s["minItems"]); ok && int(mi) > n {
		n = int(mi)
	}
	if mx, ok := number(s["maxItems"]); ok && int(mx) < n {
		n = int(mx)
	}
	out := make([]any, 0, n)
	unique, _ := s["uniqueItems"].(bool)
	saved := g.seed
	for range n {
		out = append(out, g.any(items, depth+1))
		if unique {
			g.seed++
		}
	}
	g.seed = saved
	return out
}

func (g *generator) str(s map[string]any) string {
	if n, ok := number(s["minLength"]); ok && n > 0 {
		return strings.Repeat(g.char(), int(n))
	}
	if n, ok := number(s["maxLength"]); ok && n == 0 {
		return ""
	}
	switch s["format"] {
	case "date":
		return time.Date(2024, 1, 1+g.seed, 0, 0, 0, 0, time.UTC).Format(time.DateOnly)
	case "date-time":
		return time.Date(2024, 1, 1+g.seed, 0, 0, 0, 0, time.UTC).Format(time.RFC3339)
	}
	return g.char()
}

func (g *generator) int(s map[string]any) float64 {
	lo, hasLo := number(s["minimum"])
	if x, ok := number(s["exclusiveMinimum"]); ok {
		lo, hasLo = x+1, true
	}
	hi, hasHi := number(s["maximum"])
	if x, ok := number(s["exclusiveMaximum"]); ok {
		hi, hasHi = x-1, true
	}
	seed := float64(g.seed)
	switch {
	case hasLo && hasHi && hi > lo:
		return lo + float64(g.seed%int(hi-lo))
	case hasLo && hasHi:
		return lo
	case hasLo:
		return lo + seed
	case hasHi:
		return hi - seed
	}
	return seed
}

// char returns "a" ... "z", "aa", ... for the seed, like spreadsheet
// column names.
func (g *generator) char() string {
	n := g.seed
	var b []byte
	for {
		b = append([]byte{byte('a' + n%26)}, b...)
		n = n/26 - 1
		if n < 0 {
			return string(b)
		}
	}
}

func number(v any) (float64, bool) {
	f, ok := v.(float64)
	return f, ok
}
