// Package tracingtest renders a run's exported spans as a stable text
// tree, for golden tests: from the SDK's in-memory recorder (FromSDK) or an
// OTLP export request (FromOTLP), so that both are checked against the
// same golden file.
package tracingtest

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// Span is what the tree checks of one exported span, whichever way it was
// exported (the SDK's in-memory recorder or OTLP).
type Span struct {
	name     string
	kind     string
	id       string // span id, hex
	parent   string // parent span id, hex ("" for a root)
	traceID  string
	status   string // "", "error"
	start    int64  // unix nanos
	attrs    map[string]string
	children []*Span
}

// FromSDK converts what the SDK recorded.
func FromSDK(ro []sdktrace.ReadOnlySpan) []*Span {
	out := make([]*Span, 0, len(ro))
	for _, s := range ro {
		sp := &Span{
			name: s.Name(), kind: strings.TrimPrefix(s.SpanKind().String(), "SpanKind"),
			id: s.SpanContext().SpanID().String(), traceID: s.SpanContext().TraceID().String(),
			start: s.StartTime().UnixNano(), attrs: map[string]string{},
		}
		if s.Parent().IsValid() {
			sp.parent = s.Parent().SpanID().String()
		}
		if s.Status().Code.String() == "Error" {
			sp.status = "error"
		}
		for _, kv := range s.Attributes() {
			sp.attrs[string(kv.Key)] = value(kv.Value)
		}
		out = append(out, sp)
	}
	return out
}

func value(v attribute.Value) string {
	if v.Type() == attribute.STRINGSLICE {
		return strings.Join(v.AsStringSlice(), ",")
	}
	return v.String()
}

// idKeys are the attributes whose values are ids, normalised to the order
// in which the rendered tree first shows them.
var idKeys = map[string]string{
	"gen_ai.agent.id": "session", "gen_ai.conversation.id": "session", "agentpool.parent_session.id": "session",
	"gen_ai.tool.call.id": "call",
}

// Render builds the tree from the spans' parent links and renders it one
// span a line, indented by depth: children of a team (its members, which
// run in parallel) in name order, others in start order. Ids are
// normalised and times left out, so that the text is the same every run.
// It fails on spans of several traces, several roots or a parent that was
// not exported.
func Render(spans []*Span) (string, error) {
	byID := map[string]*Span{}
	for _, s := range spans {
		byID[s.id] = s
	}
	var roots []*Span
	traces := map[string]bool{}
	for _, s := range spans {
		traces[s.traceID] = true
		if s.parent == "" {
			roots = append(roots, s)
			continue
		}
		p, ok := byID[s.parent]
		if !ok {
			roots = append(roots, s) // a remote parent: the caller's
			continue
		}
		p.children = append(p.children, s)
	}
	if len(traces) != 1 || len(roots) != 1 {
		return "", fmt.Errorf("%d traces, %d roots, want one of each", len(traces), len(roots))
	}
	ids := map[string]string{}
	counts := map[string]int{}
	var b strings.Builder
	var walk func(s *Span, depth int)
	walk = func(s *Span, depth int) {
		b.WriteString(strings.Repeat("  ", depth))
		fmt.Fprintf(&b, "%s [%s]", s.name, s.kind)
		if s.status != "" {
			b.WriteString(" status=" + s.status)
		}
		keys := make([]string, 0, len(s.attrs))
		for k := range s.attrs {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			v := s.attrs[k]
			if kind, ok := idKeys[k]; ok {
				n, seen := ids[v]
				if !seen {
					counts[kind]++
					n = fmt.Sprintf("<%s %d>", kind, counts[kind])
					ids[v] = n
				}
				v = n
			}
			fmt.Fprintf(&b, "\n%s    %s=%s", strings.Repeat("  ", depth), k, v)
		}
		b.WriteString("\n")
		byName := s.attrs["gen_ai.operation.name"] == "invoke_workflow"
		slices.SortStableFunc(s.children, func(x, y *Span) int {
			if byName {
				return strings.Compare(x.name, y.name)
			}
			return int(x.start - y.start)
		})
		for _, c := range s.children {
			walk(c, depth+1)
		}
	}
	walk(roots[0], 0)
	return b.String(), nil
}

// Name is the span's name.
func (s *Span) Name() string { return s.name }

// Root reports whether the span has no parent in the trace.
func (s *Span) Root() bool { return s.parent == "" }

// Attr is the span's attribute k, rendered.
func (s *Span) Attr(k string) string { return s.attrs[k] }

// TraceID is the span's trace id, hex.
func (s *Span) TraceID() string { return s.traceID }

// ParentID is the span's parent span id, hex ("" for none).
func (s *Span) ParentID() string { return s.parent }

// ID is the span's id, hex.
func (s *Span) ID() string { return s.id }
