// Connections: AgentPool's `connections:` of an agent or team, which
// forward the node's final output to other nodes as their prompt.

package config

import (
	"fmt"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Connection forwards the final output of a node's run to another node,
// which runs with it as its prompt in a child session of the run
// (AgentPool's node connection of type "run").
type Connection struct {
	Target string // the agent or team that receives the output
	// Wait is wait_for_completion: the run ends after the target's; when
	// false the target runs in the background (the session still ends
	// only after it).
	Wait bool
	// Delay is waited before forwarding.
	Delay time.Duration
	// Filter forwards only outputs that meet it; Stop disconnects the
	// connection, for the rest of the pool's life, at the first output
	// that meets it (that output is not forwarded); Exit is the same as
	// Stop (AgentPool exits the program).
	Filter, Stop, Exit *Condition
	Line               int
}

// Condition types.
const (
	CondWordMatch      = "word_match"
	CondMessageCount   = "message_count"
	CondTime           = "time"
	CondTokenThreshold = "token_threshold"
	CondCostLimit      = "cost_limit"
	CondCost           = "cost"
	CondAnd            = "and"
	CondOr             = "or"
)

// Condition is AgentPool's connection condition, checked against the
// output being forwarded and the connection's counters.
type Condition struct {
	Type string
	// word_match: Words found in the output (any or all, Mode).
	Words         []string
	CaseSensitive bool
	Mode          string // "any" (default) or "all"
	// message_count: MaxMessages outputs seen by the connection.
	MaxMessages int
	// time: Duration since the connection was made (the pool built).
	Duration time.Duration
	// token_threshold: MaxTokens used (CountType total, prompt or
	// completion) by the run whose output it is.
	MaxTokens int
	CountType string
	// cost_limit (the run's cost) and cost (the connection's total).
	MaxCost float64
	// and, or.
	Conditions []*Condition
}

var (
	connectionKeys = []string{
		"type", "name", "connection_type", "wait_for_completion", "queued", "queue_strategy", "priority",
		"delay", "filter_condition", "stop_condition", "exit_condition", "transform",
		"path", "template", "encoding", "callable", "kw_args",
	}
	conditionKeys = map[string][]string{
		CondWordMatch:      {"words", "case_sensitive", "mode"},
		CondMessageCount:   {"max_messages", "count_mode"},
		CondTime:           {"duration"},
		CondTokenThreshold: {"max_tokens", "count_type"},
		CondCostLimit:      {"max_cost"},
		CondCost:           {"max_cost"},
		CondAnd:            {"conditions"},
		CondOr:             {"conditions"},
	}
	conditionTypes = []string{CondWordMatch, CondMessageCount, CondTime, CondTokenThreshold, CondCostLimit, CondCost, CondAnd, CondOr}
)

// connections reads `connections:`.
func (p *parser) connections(n *yaml.Node, path string) []Connection {
	var out []Connection
	for i, c := range p.list(n, path) {
		ip := index(path, i)
		f, ok := p.object(c, ip, connectionKeys)
		if !ok {
			continue
		}
		typ := "node"
		if e, ok := f["type"]; ok {
			typ, _ = p.word(e.val, ip+".type")
		}
		switch typ {
		case "node":
		case "callable":
			p.python(c.Line, ip, "callable connection %s is a Python import path", describe(f["callable"].val))
			continue
		case "file":
			p.add(c.Line, ip, "file connections are not supported: agentpool stores every session (see agentpool sessions show ID)")
			continue
		default:
			p.add(f["type"].val.Line, ip+".type", "unknown connection type %q (node, file or callable)", typ)
			continue
		}
		conn := Connection{Wait: true, Line: c.Line}
		if e, ok := f["name"]; ok {
			conn.Target, _ = p.word(e.val, ip+".name")
			conn.Line = e.val.Line
		} else {
			p.add(c.Line, ip, "missing required field \"name\" (the agent or team to forward to)")
		}
		if e, ok := f["connection_type"]; ok {
			if ct, ok := p.word(e.val, ip+".connection_type"); ok && ct != "run" {
				p.add(e.val.Line, ip+".connection_type", "connection_type %q is not supported: agentpool forwards by running the target (run)", ct)
			}
		}
		if e, ok := f["wait_for_completion"]; ok {
			conn.Wait = p.boolean(e.val, ip+".wait_for_completion", true)
		}
		if e, ok := f["queued"]; ok && p.boolean(e.val, ip+".queued", false) {
			p.add(e.val.Line, ip+".queued", "queued connections (processed by hand) are not supported")
		}
		if e, ok := f["transform"]; ok && !isNull(e.val) {
			p.python(e.val.Line, ip+".transform", "transform %s is a Python import path", describe(e.val))
		}
		for _, k := range []string{"queue_strategy", "priority"} {
			if e, ok := f[k]; ok {
				p.value(e.val, join(ip, k)) // only meaningful for queued connections
			}
		}
		if e, ok := f["delay"]; ok {
			conn.Delay = p.seconds(e.val, ip+".delay")
		}
		conn.Filter = p.optCondition(f, "filter_condition", ip)
		conn.Stop = p.optCondition(f, "stop_condition", ip)
		conn.Exit = p.optCondition(f, "exit_condition", ip)
		out = append(out, conn)
	}
	return out
}

func (p *parser) optCondition(f map[string]entry, key, path string) *Condition {
	e, ok := f[key]
	if !ok || isNull(e.val) {
		return nil
	}
	return p.condition(e.val, join(path, key))
}

// condition reads one condition.
func (p *parser) condition(n *yaml.Node, path string) *Condition {
	tn := findKey(n, "type")
	if tn == nil {
		p.object(n, path, nil)
		if d := deref(n); d.Kind == yaml.MappingNode {
			p.add(n.Line, path, "missing required field \"type\" (%s)", strings.Join(conditionTypes, ", "))
		}
		return nil
	}
	typ, ok := p.word(tn, path+".type")
	if !ok {
		return nil
	}
	switch typ {
	case "callable":
		p.python(n.Line, path, "condition predicate %s is a Python import path", describe(findKey(n, "predicate")))
		return nil
	case "jinja2":
		p.add(tn.Line, path+".type", "jinja2 conditions are not supported: agentpool renders no Jinja templates")
		return nil
	}
	keys, known := conditionKeys[typ]
	if !known {
		p.add(tn.Line, path+".type", "unknown condition type %q%s", typ, orKnown(typ, conditionTypes))
		return nil
	}
	f, _ := p.object(n, path, append([]string{"type", "name"}, keys...))
	c := &Condition{Type: typ, Mode: "any", CountType: "total"}
	need := func(k string) (*yaml.Node, bool) {
		e, ok := f[k]
		if !ok {
			p.add(n.Line, path, "missing required field %q (a %s condition)", k, typ)
		}
		return e.val, ok
	}
	switch typ {
	case CondWordMatch:
		if v, ok := need("words"); ok {
			for i, w := range p.list(v, path+".words") {
				c.Words = append(c.Words, p.requiredStr(w, index(path+".words", i)))
			}
		}
		if e, ok := f["case_sensitive"]; ok {
			c.CaseSensitive = p.boolean(e.val, path+".case_sensitive", false)
		}
		c.Mode = p.choice(f, "mode", path, "any", "all")
	case CondMessageCount:
		if v, ok := need("max_messages"); ok {
			c.MaxMessages = p.positive(v, path+".max_messages")
		}
		if p.choice(f, "count_mode", path, "total", "per_agent") == "per_agent" {
			// Each connection has one source: its count is per agent.
			c.Mode = "per_agent"
		}
	case CondTime:
		if v, ok := need("duration"); ok {
			c.Duration = p.seconds(v, path+".duration")
		}
	case CondTokenThreshold:
		if v, ok := need("max_tokens"); ok {
			c.MaxTokens = p.positive(v, path+".max_tokens")
		}
		c.CountType = p.choice(f, "count_type", path, "total", "prompt", "completion")
	case CondCostLimit, CondCost:
		if v, ok := need("max_cost"); ok {
			c.MaxCost = p.price(v, path+".max_cost")
		}
	case CondAnd, CondOr:
		if v, ok := need("conditions"); ok {
			for i, cn := range p.list(v, path+".conditions") {
				if sub := p.condition(cn, index(path+".conditions", i)); sub != nil {
					c.Conditions = append(c.Conditions, sub)
				}
			}
		}
	}
	return c
}

// choice reads an optional word that must be one of values (the first is
// the default).
func (p *parser) choice(f map[string]entry, key, path string, values ...string) string {
	e, ok := f[key]
	if !ok {
		return values[0]
	}
	v, ok := p.word(e.val, join(path, key))
	if !ok {
		return values[0]
	}
	if !contains(values, v) {
		p.add(e.val.Line, join(path, key), "unknown value %q (%s)", v, strings.Join(values, ", "))
		return values[0]
	}
	return v
}

// positive reads an integer greater than 0.
func (p *parser) positive(n *yaml.Node, path string) int {
	v := p.count(n, path)
	if v == 0 && !isNull(n) && deref(n).Value == "0" {
		p.add(n.Line, path, "must be greater than 0")
	}
	return v
}

// checkConnections reports connections to nodes that do not exist.
func (p *parser) checkConnections(m *Manifest, defined func(string) bool, unknown func(string) string) {
	check := func(kind, name string, conns []Connection) {
		for i, c := range conns {
			if c.Target != "" && !defined(c.Target) {
				p.add(c.Line, fmt.Sprintf("%s.%s.connections[%d].name", kind, name, i), "%s", unknown(c.Target))
			}
		}
	}
	for _, an := range m.AgentOrder {
		check("agents", an, m.Agents[an].Connections)
	}
	for _, tn := range m.TeamOrder {
		check("teams", tn, m.Teams[tn].Connections)
	}
}
