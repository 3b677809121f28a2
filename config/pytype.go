// Python type annotations of AgentPool's inline response fields ("str",
// "list[str]", "dict[str, float]", "int | None", "Literal['a', 'b']"),
// read as JSON schemas.

package config

import (
	"strconv"
	"strings"
)

// pythonType returns the JSON schema of a Python type annotation, or an
// error text.
func pythonType(s string) (map[string]any, string) {
	r := &typeReader{s: s}
	t, err := r.union()
	r.skip()
	if err == "" && r.i < len(r.s) {
		err = "unexpected " + strconv.Quote(r.s[r.i:])
	}
	if err != "" {
		return nil, "unknown field type " + strconv.Quote(s) + ": " + err + " (use str, int, float, bool, list[T], dict[str, T], Literal[...], T | None)"
	}
	return t, ""
}

type typeReader struct {
	s string
	i int
}

func (r *typeReader) skip() {
	for r.i < len(r.s) && r.s[r.i] == ' ' {
		r.i++
	}
}

func (r *typeReader) eat(c byte) bool {
	r.skip()
	if r.i < len(r.s) && r.s[r.i] == c {
		r.i++
		return true
	}
	return false
}

func (r *typeReader) union() (map[string]any, string) {
	var alts []any
	for {
		t, err := r.atom()
		if err != "" {
			return nil, err
		}
		alts = append(alts, t)
		if !r.eat('|') {
			break
		}
	}
	if len(alts) == 1 {
		return alts[0].(map[string]any), ""
	}
	return map[string]any{"anyOf": alts}, ""
}

func (r *typeReader) name() string {
	r.skip()
	start := r.i
	for r.i < len(r.s) {
		c := r.s[r.i]
		if c != '_' && c != '.' && !('a' <= c && c <= 'z') && !('A' <= c && c <= 'Z') && !('0' <= c && c <= '9') {
			break
		}
		r.i++
	}
	n := r.s[start:r.i]
	if i := strings.LastIndexByte(n, '.'); i >= 0 {
		n = n[i+1:] // typing.List -> List
	}
	return n
}

// args reads "[T, U]" after a generic name.
func (r *typeReader) args() ([]map[string]any, string) {
	if !r.eat('[') {
		return nil, ""
	}
	var out []map[string]any
	for {
		if r.eat('.') { // tuple[int, ...]
			r.i += 2
		} else {
			t, err := r.union()
			if err != "" {
				return nil, err
			}
			out = append(out, t)
		}
		if r.eat(']') {
			return out, ""
		}
		if !r.eat(',') {
			return nil, "expected \",\" or \"]\""
		}
	}
}

func (r *typeReader) atom() (map[string]any, string) {
	n := r.name()
	switch n {
	case "":
		return nil, "expected a type name"
	case "Literal":
		return r.literal()
	}
	if scalar, ok := pyScalars[n]; ok {
		out := map[string]any{}
		for k, v := range scalar {
			out[k] = v
		}
		return out, ""
	}
	args, err := r.args()
	if err != "" {
		return nil, err
	}
	arg := func(i int) map[string]any {
		if i < len(args) {
			return args[i]
		}
		return map[string]any{}
	}
	switch n {
	case "list", "List", "Sequence", "tuple", "Tuple", "Iterable":
		return map[string]any{"type": "array", "items": arg(0)}, ""
	case "set", "Set", "frozenset", "FrozenSet":
		return map[string]any{"type": "array", "items": arg(0), "uniqueItems": true}, ""
	case "dict", "Dict", "Mapping":
		return map[string]any{"type": "object", "additionalProperties": arg(1)}, ""
	case "Optional":
		return map[string]any{"anyOf": []any{arg(0), map[string]any{"type": "null"}}}, ""
	case "Union":
		alts := make([]any, len(args))
		for i, a := range args {
			alts[i] = a
		}
		return map[string]any{"anyOf": alts}, ""
	}
	return nil, "unknown type " + strconv.Quote(n)
}

// literal reads "Literal['a', 2, True]" as an enum.
func (r *typeReader) literal() (map[string]any, string) {
	if !r.eat('[') {
		return nil, "expected \"[\" after Literal"
	}
	var vals []any
	for {
		r.skip()
		if r.i >= len(r.s) {
			return nil, "unterminated Literal"
		}
		switch c := r.s[r.i]; c {
		case '\'', '"':
			end := strings.IndexByte(r.s[r.i+1:], c)
			if end < 0 {
				return nil, "unterminated string"
			}
			vals = append(vals, r.s[r.i+1:r.i+1+end])
			r.i += end + 2
		default:
			start := r.i
			for r.i < len(r.s) && r.s[r.i] != ',' && r.s[r.i] != ']' {
				r.i++
			}
			v := strings.TrimSpace(r.s[start:r.i])
			switch {
			case v == "True" || v == "False":
				vals = append(vals, v == "True")
			case v == "None":
				vals = append(vals, nil)
			default:
				f, err := strconv.ParseFloat(v, 64)
				if err != nil {
					return nil, "bad literal " + strconv.Quote(v)
				}
				vals = append(vals, f)
			}
		}
		if r.eat(']') {
			return map[string]any{"enum": vals}, ""
		}
		if !r.eat(',') {
			return nil, "expected \",\" or \"]\" in Literal"
		}
	}
}

// pyScalars are the Python scalar types and their JSON schemas.
var pyScalars = map[string]map[string]any{
	"str": {"type": "string"}, "string": {"type": "string"},
	"int": {"type": "integer"}, "integer": {"type": "integer"},
	"float": {"type": "number"}, "number": {"type": "number"}, "Decimal": {"type": "number"},
	"bool": {"type": "boolean"}, "boolean": {"type": "boolean"},
	"None": {"type": "null"}, "NoneType": {"type": "null"},
	"Any": {}, "any": {}, "object": {},
	"date":     {"type": "string", "format": "date"},
	"datetime": {"type": "string", "format": "date-time"},
	"UUID":     {"type": "string", "format": "uuid"},
}
