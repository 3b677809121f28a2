package opencode

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
)

// A small JSON Schema validator for the keywords the OpenAPI documents
// use ($ref, type, properties, required, additionalProperties, items,
// enum, anyOf, pattern, minimum): responses and events are checked
// against opencode's own schemas (testdata), and /doc against itself.

type schemaDoc struct {
	Paths      map[string]map[string]json.RawMessage `json:"paths"`
	Components struct {
		Schemas map[string]any `json:"schemas"`
	} `json:"components"`
}

var (
	refOnce sync.Once
	refDoc  *schemaDoc
	refErr  error
)

// reference loads the opencode 1.18.33 subset of testdata.
func reference(t *testing.T) *schemaDoc {
	t.Helper()
	refOnce.Do(func() {
		b, err := os.ReadFile("testdata/opencode-1.18.33-subset.json")
		if err != nil {
			refErr = err
			return
		}
		refDoc = &schemaDoc{}
		refErr = json.Unmarshal(b, refDoc)
	})
	if refErr != nil {
		t.Fatal(refErr)
	}
	return refDoc
}

// checkSchema validates v (decoded JSON) against the component name of
// doc; it returns the problems found.
func checkSchema(doc *schemaDoc, name string, v any) []string {
	var errs []string
	validate(doc, map[string]any{"$ref": "#/components/schemas/" + name}, v, name, &errs)
	return errs
}

// mustMatch fails t when v does not match the reference component name.
func mustMatch(t *testing.T, name string, v any) {
	t.Helper()
	if errs := checkSchema(reference(t), name, v); len(errs) > 0 {
		b, _ := json.Marshal(v)
		t.Fatalf("not a valid opencode %s:\n  %s\nvalue: %.2000s", name, strings.Join(errs, "\n  "), b)
	}
}

var patterns sync.Map

func validate(doc *schemaDoc, schema any, v any, at string, errs *[]string) {
	s, ok := schema.(map[string]any)
	if !ok {
		if b, isBool := schema.(bool); isBool && !b {
			*errs = append(*errs, at+": not allowed")
		}
		return
	}
	if r, ok := s["$ref"].(string); ok {
		name := strings.TrimPrefix(r, "#/components/schemas/")
		target, ok := doc.Components.Schemas[name]
		if !ok {
			*errs = append(*errs, fmt.Sprintf("%s: unresolved $ref %s", at, r))
			return
		}
		validate(doc, target, v, at, errs)
		return
	}
	if alts, ok := s["anyOf"].([]any); ok {
		var best []string
		for _, alt := range alts {
			var e []string
			validate(doc, alt, v, at, &e)
			if len(e) == 0 {
				best = nil
				break
			}
			if best == nil || len(e) < len(best) {
				best = e
			}
		}
		if best != nil {
			*errs = append(*errs, fmt.Sprintf("%s: matches no alternative of anyOf (closest: %s)", at, strings.Join(best, "; ")))
		}
	}
	if typ, ok := s["type"].(string); ok && !hasType(typ, v) {
		*errs = append(*errs, fmt.Sprintf("%s: want %s, got %T", at, typ, v))
		return
	}
	if enum, ok := s["enum"].([]any); ok {
		found := false
		for _, e := range enum {
			if fmt.Sprint(e) == fmt.Sprint(v) {
				found = true
			}
		}
		if !found {
			*errs = append(*errs, fmt.Sprintf("%s: %v not in %v", at, v, enum))
		}
	}
	if p, ok := s["pattern"].(string); ok {
		if str, ok := v.(string); ok {
			re, _ := patterns.LoadOrStore(p, regexp.MustCompile(p))
			if !re.(*regexp.Regexp).MatchString(str) {
				*errs = append(*errs, fmt.Sprintf("%s: %q does not match %s", at, str, p))
			}
		}
	}
	if m, ok := s["minimum"].(float64); ok {
		if f, ok := v.(float64); ok && f < m {
			*errs = append(*errs, fmt.Sprintf("%s: %v < minimum %v", at, f, m))
		}
	}
	switch x := v.(type) {
	case map[string]any:
		props, _ := s["properties"].(map[string]any)
		for _, r := range asStrings(s["required"]) {
			if _, ok := x[r]; !ok {
				*errs = append(*errs, fmt.Sprintf("%s: missing required %s", at, r))
			}
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if ps, ok := props[k]; ok {
				validate(doc, ps, x[k], at+"."+k, errs)
				continue
			}
			switch ap := s["additionalProperties"].(type) {
			case bool:
				if !ap {
					*errs = append(*errs, fmt.Sprintf("%s: unexpected property %s", at, k))
				}
			case map[string]any:
				validate(doc, ap, x[k], at+"."+k, errs)
			}
		}
	case []any:
		if items, ok := s["items"]; ok {
			for i, e := range x {
				validate(doc, items, e, fmt.Sprintf("%s[%d]", at, i), errs)
			}
		}
	}
}

func asStrings(v any) []string {
	var out []string
	if xs, ok := v.([]any); ok {
		for _, x := range xs {
			if s, ok := x.(string); ok {
				out = append(out, s)
			}
		}
	}
	return out
}

func hasType(typ string, v any) bool {
	switch typ {
	case "object":
		_, ok := v.(map[string]any)
		return ok
	case "array":
		_, ok := v.([]any)
		return ok
	case "string":
		_, ok := v.(string)
		return ok
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "number":
		_, ok := v.(float64)
		return ok
	case "integer":
		f, ok := v.(float64)
		return ok && f == math.Trunc(f)
	case "null":
		return v == nil
	}
	return true
}

// responseSchema returns the reference's schema of a route's response.
func responseSchema(t *testing.T, path, method, status string) any {
	t.Helper()
	op, ok := reference(t).Paths[path][method]
	if !ok {
		t.Fatalf("reference has no %s %s", method, path)
	}
	var o struct {
		Responses map[string]struct {
			Content map[string]struct {
				Schema any `json:"schema"`
			} `json:"content"`
		} `json:"responses"`
	}
	if err := json.Unmarshal(op, &o); err != nil {
		t.Fatal(err)
	}
	return o.Responses[status].Content["application/json"].Schema
}

// mustMatchResponse validates a decoded body against the reference's
// response schema of the route.
func mustMatchResponse(t *testing.T, method, path, status string, v any) {
	t.Helper()
	var errs []string
	validate(reference(t), responseSchema(t, path, method, status), v, method+" "+path, &errs)
	if len(errs) > 0 {
		b, _ := json.Marshal(v)
		t.Fatalf("%s %s %s does not match opencode's schema:\n  %s\nbody: %.2000s", method, path, status, strings.Join(errs, "\n  "), b)
	}
}

func TestValidatorCatchesMistakes(t *testing.T) {
	doc := reference(t)
	good := map[string]any{"name": "NotFoundError", "data": map[string]any{"message": "x"}}
	if errs := checkSchema(doc, "NotFoundError", good); len(errs) > 0 {
		t.Fatal(errs)
	}
	for _, bad := range []any{
		map[string]any{"name": "Other", "data": map[string]any{"message": "x"}},
		map[string]any{"name": "NotFoundError"},
		map[string]any{"name": "NotFoundError", "data": map[string]any{"message": 1.0}},
	} {
		if errs := checkSchema(doc, "NotFoundError", bad); len(errs) == 0 {
			t.Fatalf("%v passed", bad)
		}
	}
	sess := map[string]any{"id": "ses_1", "slug": "s", "projectID": "p", "directory": "/", "title": "t", "version": "v",
		"time": map[string]any{"created": 1.0, "updated": 1.0}, "extra": true}
	if errs := checkSchema(doc, "Session", sess); len(errs) != 1 || !strings.Contains(errs[0], "unexpected property extra") {
		t.Fatalf("got %v", errs)
	}
}
