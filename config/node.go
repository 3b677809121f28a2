package config

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/agentpool/agentpool/internal/bounded"
)

// parser walks a yaml.Node tree by hand, collecting issues with lines.
type parser struct {
	file string
	// opts say which model types the program can build.
	opts Options
	// budget bounds the files the manifest reads and the YAML nodes it
	// holds, its own included (bounded.Config).
	budget *bounded.Budget
	// refused is set when a bound of the budget was hit.
	refused  bool
	issues   []Issue
	warnings []Issue
	// inherited are the files merged in by INHERIT; the lines of their
	// nodes carry the file (see fileLineBase).
	inherited []string
	// prompts is the prompt library (`prompts.system_prompts`), for
	// system_prompt entries of type library.
	prompts map[string]string
	// responses are the structured outputs of `responses:`, for
	// output_type references.
	responses map[string]*OutputSpec
	// defaultModel is `default_model:` when the manifest sets it.
	defaultModel *ModelSpec
	// variants are the models of `model_variants:` (WolfHarness), by
	// name: a model string that is one of the names is that model.
	variants map[string]ModelSpec
	// teamModeTop is the manifest's team_mode, agentTeamMode each agent's
	// own (WolfHarness; see applyTeamMode).
	teamModeTop   *teamModeSpec
	agentTeamMode map[string]*teamModeSpec

	// side data for the cross-reference pass
	defaultLine int
	memberLines map[string][]int       // team -> line of each member
	workerRefs  map[string][]workerRef // agent -> one per entry of Agent.Workers
}

// workerRef locates a parsed worker in its YAML list.
type workerRef struct {
	index int    // index in the YAML list
	typ   string // declared type, "" if none
}

func (p *parser) add(line int, field, format string, args ...any) {
	file := p.file
	if k := line / fileLineBase; k > 0 && k <= len(p.inherited) {
		file, line = p.inherited[k-1], line%fileLineBase
	}
	p.issues = append(p.issues, Issue{File: file, Line: line, Field: field, Msg: fmt.Sprintf(format, args...)})
}

// entry is one key/value pair of a mapping.
type entry struct {
	key     string
	keyNode *yaml.Node
	val     *yaml.Node
}

func (e entry) line() int { return e.keyNode.Line }

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func index(path string, i int) string { return fmt.Sprintf("%s[%d]", path, i) }

// deref follows aliases.
func deref(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i < 100; i++ {
		n = n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool {
	n = deref(n)
	return n == nil || (n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null")
}

// describe names a node's value for "expected X, got Y" messages.
func describe(n *yaml.Node) string {
	n = deref(n)
	switch {
	case n == nil:
		return "nothing"
	case n.Kind == yaml.MappingNode:
		return "a mapping"
	case n.Kind == yaml.SequenceNode:
		return "a list"
	case n.Kind == yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!null":
			return "null"
		case "!!str":
			return strconv.Quote(n.Value)
		default:
			return n.Value
		}
	}
	return "an unsupported YAML node"
}

// entries returns the pairs of a mapping node in order, resolving aliases and
// merge keys ("<<"; explicit keys win), and reporting duplicate and
// non-scalar keys.
func (p *parser) entries(n *yaml.Node, path string) []entry {
	n = deref(n)
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	var out []entry
	seen := map[string]int{}
	var merges []*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		kd := deref(k)
		if kd == nil || kd.Kind != yaml.ScalarNode {
			p.add(k.Line, path, "mapping keys must be strings, got %s", describe(kd))
			continue
		}
		if kd.ShortTag() == "!!merge" {
			merges = append(merges, v)
			continue
		}
		if first, dup := seen[kd.Value]; dup {
			p.add(k.Line, join(path, kd.Value), "duplicate key %q (first defined at line %s)", kd.Value, p.lineRef(first))
			continue
		}
		seen[kd.Value] = k.Line
		out = append(out, entry{key: kd.Value, keyNode: k, val: v})
	}
	for _, m := range merges {
		line := m.Line
		m = deref(m)
		var srcs []*yaml.Node
		switch m.Kind {
		case yaml.MappingNode:
			srcs = []*yaml.Node{m}
		case yaml.SequenceNode:
			for _, s := range m.Content {
				srcs = append(srcs, deref(s))
			}
		}
		if len(srcs) == 0 {
			p.add(line, path, "merge key \"<<\" expects a mapping or a list of mappings, got %s", describe(m))
		}
		for _, s := range srcs {
			if s.Kind != yaml.MappingNode {
				p.add(s.Line, path, "merge key \"<<\" expects a mapping or a list of mappings, got %s", describe(s))
				continue
			}
			for _, e := range p.entries(s, path) {
				if _, ok := seen[e.key]; ok {
					continue
				}
				seen[e.key] = e.line()
				out = append(out, e)
			}
		}
	}
	return out
}

// object checks that n is a mapping (null counts as empty), reports unknown
// keys, and returns the known entries by key. ok is false when n is not a
// mapping (which is reported).
func (p *parser) object(n *yaml.Node, path string, known []string) (fields map[string]entry, ok bool) {
	fields = map[string]entry{}
	if isNull(n) {
		return fields, true
	}
	if d := deref(n); d.Kind != yaml.MappingNode {
		p.add(n.Line, path, "expected a mapping, got %s", describe(d))
		return fields, false
	}
	for _, e := range p.entries(n, path) {
		if !contains(known, e.key) {
			if isExtension(e.key) || (path == "" && isAnchorHolder(e.key)) {
				continue // extension keys hold anchors (at every level)
			}
			if msg, ok := foreignKey(path, e.key, e.val); ok {
				p.add(e.line(), join(path, e.key), "%s", msg)
				continue
			}
			p.add(e.line(), join(path, e.key), "unknown field %q%s", e.key, suggest(e.key, known))
			continue
		}
		fields[e.key] = e
	}
	return fields, true
}

// list checks that n is a list (null counts as empty) and returns its items.
func (p *parser) list(n *yaml.Node, path string) []*yaml.Node {
	if isNull(n) {
		return nil
	}
	d := deref(n)
	if d.Kind != yaml.SequenceNode {
		p.add(n.Line, path, "expected a list, got %s", describe(d))
		return nil
	}
	return d.Content
}

// str reads a scalar as a string; null gives "". Non-string scalars (numbers,
// booleans) are taken as written.
func (p *parser) str(n *yaml.Node, path string) string {
	d := deref(n)
	if isNull(d) {
		return ""
	}
	if d.Kind != yaml.ScalarNode {
		p.add(n.Line, path, "expected a string, got %s", describe(d))
		return ""
	}
	return d.Value
}

// requiredStr reads a string that must be present and non-empty.
func (p *parser) requiredStr(n *yaml.Node, path string) string {
	d := deref(n)
	if d != nil && (d.Kind == yaml.MappingNode || d.Kind == yaml.SequenceNode) {
		return p.str(n, path)
	}
	s := p.str(n, path)
	if strings.TrimSpace(s) == "" {
		p.add(n.Line, path, "must not be empty")
	}
	return s
}

// word reads a non-empty string such as a type or a mode, trimmed of
// surrounding space; ok is false when it is missing (which is reported).
func (p *parser) word(n *yaml.Node, path string) (string, bool) {
	s := strings.TrimSpace(p.requiredStr(n, path))
	return s, s != ""
}

// count reads a non-negative integer; null gives 0.
func (p *parser) count(n *yaml.Node, path string) int {
	d := deref(n)
	if isNull(d) {
		return 0
	}
	var v int
	if d.Kind != yaml.ScalarNode || d.ShortTag() != "!!int" || d.Decode(&v) != nil {
		p.add(n.Line, path, "expected an integer, got %s", describe(d))
		return 0
	}
	if v < 0 {
		p.add(n.Line, path, "must not be negative, got %d", v)
		return 0
	}
	return v
}

// number reads a finite float (integers accepted); null gives ok=false.
func (p *parser) number(n *yaml.Node, path string) (v float64, ok bool) {
	d := deref(n)
	if isNull(d) {
		return 0, false
	}
	tag := d.ShortTag()
	if d.Kind != yaml.ScalarNode || (tag != "!!int" && tag != "!!float") || d.Decode(&v) != nil ||
		math.IsNaN(v) || math.IsInf(v, 0) {
		p.add(n.Line, path, "expected a number, got %s", describe(d))
		return 0, false
	}
	return v, true
}

// price reads a non-negative number; null gives 0.
func (p *parser) price(n *yaml.Node, path string) float64 {
	v, ok := p.number(n, path)
	if ok && v < 0 {
		p.add(n.Line, path, "must not be negative, got %v", v)
		return 0
	}
	return v
}

// boolean reads a boolean; null gives def.
func (p *parser) boolean(n *yaml.Node, path string, def bool) bool {
	d := deref(n)
	if isNull(d) {
		return def
	}
	var v bool
	if d.Kind != yaml.ScalarNode || d.ShortTag() != "!!bool" || d.Decode(&v) != nil {
		p.add(n.Line, path, "expected true or false, got %s", describe(d))
		return def
	}
	return v
}

// duration reads a non-negative Go duration string ("30s", "1m30s"); null and
// the integer 0 give 0.
func (p *parser) duration(n *yaml.Node, path string) time.Duration {
	d := deref(n)
	if isNull(d) {
		return 0
	}
	if d.Kind != yaml.ScalarNode {
		p.add(n.Line, path, "expected a duration such as \"30s\", got %s", describe(d))
		return 0
	}
	if d.ShortTag() == "!!int" && d.Value == "0" {
		return 0
	}
	v, err := time.ParseDuration(d.Value)
	if err != nil {
		p.add(n.Line, path, "invalid duration %q (use a Go duration such as \"30s\", \"500ms\" or \"2m\")", d.Value)
		return 0
	}
	if v < 0 {
		p.add(n.Line, path, "duration must not be negative, got %q", d.Value)
		return 0
	}
	return v
}

// value converts any node into plain Go values fit for JSON: map[string]any,
// []any, string, int, float64, bool or nil.
func (p *parser) value(n *yaml.Node, path string) any {
	d := deref(n)
	if d == nil {
		return nil
	}
	switch d.Kind {
	case yaml.MappingNode:
		m := make(map[string]any, len(d.Content)/2)
		for _, e := range p.entries(d, path) {
			m[e.key] = p.value(e.val, join(path, e.key))
		}
		return m
	case yaml.SequenceNode:
		s := make([]any, 0, len(d.Content))
		for i, c := range d.Content {
			s = append(s, p.value(c, index(path, i)))
		}
		return s
	case yaml.ScalarNode:
		var v any
		if err := d.Decode(&v); err != nil {
			p.add(n.Line, path, "invalid value %s", describe(d))
			return nil
		}
		if f, ok := v.(float64); ok && (math.IsNaN(f) || math.IsInf(f, 0)) {
			p.add(n.Line, path, "invalid value %s: not a finite number", describe(d))
			return nil
		}
		return v
	}
	return nil
}

// args reads a mapping of tool-call arguments; null gives an empty map.
func (p *parser) args(n *yaml.Node, path string) map[string]any {
	d := deref(n)
	if isNull(d) {
		return map[string]any{}
	}
	if d.Kind != yaml.MappingNode {
		p.add(n.Line, path, "expected a mapping of tool arguments, got %s", describe(d))
		return map[string]any{}
	}
	return p.value(d, path).(map[string]any)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// suggest returns ` (did you mean "x"?)` for the known word closest to s, or
// "" when none is close.
func suggest(s string, known []string) string {
	if w := nearest(s, known); w != "" {
		return fmt.Sprintf(" (did you mean %q?)", w)
	}
	return ""
}

func nearest(s string, known []string) string {
	best, bestDist := "", 0
	limit := 1 + len(s)/4
	if limit > 3 {
		limit = 3
	}
	for _, k := range known {
		d := distance(strings.ToLower(s), strings.ToLower(k))
		if d <= limit && (best == "" || d < bestDist) {
			best, bestDist = k, d
		}
	}
	return best
}

// distance is the optimal string alignment distance (Levenshtein with
// adjacent transpositions).
func distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}
