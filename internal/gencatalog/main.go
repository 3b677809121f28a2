// Command gencatalog writes docs/catalog.md: every hook point (package
// hook) and every event kind (package event) with its payload fields,
// found by reflection over the Go types. Run it with `go generate ./hook`.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"reflect"
	"sort"
	"strings"

	"github.com/agentpool/agentpool/approval"
	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/hook"
	"github.com/agentpool/agentpool/hook/command"
)

func main() {
	out := flag.String("o", "docs/catalog.md", "output file")
	flag.Parse()
	data, err := render()
	if err != nil {
		fmt.Fprintln(os.Stderr, "gencatalog:", err)
		os.Exit(1)
	}
	if err := os.WriteFile(*out, data, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "gencatalog:", err)
		os.Exit(1)
	}
}

// events lists one value of every event type; render checks that it covers
// event.Kinds.
var events = []event.Event{
	event.RunStarted{}, event.PartStart{}, event.PartDelta{}, event.PartEnd{},
	event.ToolCallStart{}, event.ToolCallProgress{}, event.ToolCallComplete{},
	event.PlanUpdate{}, event.StreamComplete{}, event.RunError{},
	event.SpawnSessionStart{}, event.SpawnSessionEnd{}, event.Subagent{}, event.Custom{},
}

// customs lists the custom events the runtime emits.
var customs = []struct {
	eventType string
	doc       string
	typ       reflect.Type
}{
	{command.EventHookRun, "One command hook run (package hook/command), in the log of the session it ran for.", reflect.TypeFor[command.HookRun]()},
	{command.EventHookLoopGuard, "A Stop / SubagentStop block overridden by the loop guard.", reflect.TypeFor[command.HookLoopGuard]()},
	{approval.EventRequested, "A tool call waits for a person's answer (package approval), in the log of the session it runs in; open until its approval_replied.", reflect.TypeFor[approval.Request]()},
	{approval.EventReplied, "How an approval request was settled.", reflect.TypeFor[approval.Answered]()},
}

var (
	rawType   = reflect.TypeFor[json.RawMessage]()
	eventType = reflect.TypeFor[event.Event]()
)

type renderer struct {
	b     bytes.Buffer
	types map[string]reflect.Type // named struct types referenced by fields
}

func (r *renderer) printf(format string, args ...any) { fmt.Fprintf(&r.b, format, args...) }

func render() ([]byte, error) {
	byKind := map[event.Kind]event.Event{}
	for _, e := range events {
		byKind[e.Kind()] = e
	}
	for _, k := range event.Kinds() {
		if byKind[k] == nil {
			return nil, fmt.Errorf("event kind %q has no type in gencatalog's list", k)
		}
	}
	if len(byKind) != len(event.Kinds()) {
		return nil, fmt.Errorf("gencatalog lists %d event types, event.Kinds() has %d", len(byKind), len(event.Kinds()))
	}

	r := &renderer{types: map[string]reflect.Type{}}
	r.printf("# Catalog of hook points and event kinds\n\n")
	r.printf("Generated from the Go types by `go generate ./hook` (`internal/gencatalog`). Do not edit;\n")
	r.printf("a test fails when this file is stale. The contracts are `docs/spec/HOOKS.md` and `docs/spec/EVENTS.md`.\n\n")

	points := hook.Points()
	r.printf("## Hook points\n\n")
	r.printf("| point | kind | payload | decision |\n|---|---|---|---|\n")
	for _, p := range points {
		dec := "—"
		if p.Decision != nil {
			dec = "`" + typeName(p.Decision) + "`"
		}
		r.printf("| [`%s`](#%s) | %s | `%s` | %s |\n", p.Name, anchor(p.Name), p.Kind, typeName(p.Payload), dec)
	}
	r.printf("\n")
	for _, p := range points {
		r.printf("### %s\n\n", p.Name)
		r.printf("%s %s\n\n", strings.ToUpper(string(p.Kind[:1]))+string(p.Kind[1:])+".", p.Doc)
		r.printf("Payload `%s`:\n\n", typeName(p.Payload))
		r.fields(p.Payload)
		if p.Decision != nil {
			r.printf("Decision `%s`", typeName(p.Decision))
			if deref(p.Decision).Kind() == reflect.Struct {
				r.printf(":\n\n")
				r.fields(p.Decision)
			} else {
				r.printf(".\n\n")
			}
		}
	}

	r.printf("## Event kinds\n\n")
	r.printf("Every event is one JSON object with an `event_kind` discriminator; optional fields are omitted when empty.\n\n")
	r.printf("| event_kind | Go type |\n|---|---|\n")
	for _, k := range event.Kinds() {
		r.printf("| [`%s`](#%s) | `%s` |\n", k, anchor(string(k)), typeName(reflect.TypeOf(byKind[k])))
	}
	r.printf("\n")
	for _, k := range event.Kinds() {
		t := reflect.TypeOf(byKind[k])
		r.printf("### %s\n\n", k)
		r.printf("Go type `%s`:\n\n", typeName(t))
		r.fields(t)
	}

	r.printf("## Custom event types\n\n")
	r.printf("`custom` events the runtime itself emits, by `event_type`, with the fields of their `event_data`.\n\n")
	for _, c := range customs {
		r.printf("### %s\n\n", c.eventType)
		r.printf("%s Go type `%s`:\n\n", c.doc, typeName(c.typ))
		r.fields(c.typ)
	}

	r.printf("## Types\n\n")
	r.printf("Object types referenced above.\n\n")
	// Rendering a type may reference more types: repeat until done.
	done := map[string]bool{}
	for {
		var names []string
		for n := range r.types {
			if !done[n] {
				names = append(names, n)
			}
		}
		if len(names) == 0 {
			break
		}
		sort.Strings(names)
		n := names[0]
		done[n] = true
		r.printf("### %s\n\n", n)
		r.fields(r.types[n])
	}
	return append(bytes.TrimRight(r.b.Bytes(), "\n"), '\n'), nil
}

func anchor(s string) string {
	var b strings.Builder
	for _, c := range strings.ToLower(s) {
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '-', c == '_':
			b.WriteRune(c)
		}
	}
	return b.String()
}

func deref(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

// typeName is the package-qualified name of a type ("hook.ToolCall").
func typeName(t reflect.Type) string {
	if t.Kind() == reflect.Pointer {
		return "*" + typeName(t.Elem())
	}
	if t.Name() == "" {
		return t.String()
	}
	pkg := t.PkgPath()
	if i := strings.LastIndex(pkg, "/"); i >= 0 {
		pkg = pkg[i+1:]
	}
	if pkg == "" {
		return t.Name()
	}
	return pkg + "." + t.Name()
}

type field struct {
	name     string
	typ      string
	optional bool
}

// fields writes the JSON fields of struct type t as a table.
func (r *renderer) fields(t reflect.Type) {
	fs := r.collect(deref(t))
	if len(fs) == 0 {
		r.printf("(no fields)\n\n")
		return
	}
	r.printf("| field | type | optional |\n|---|---|---|\n")
	for _, f := range fs {
		opt := ""
		if f.optional {
			opt = "yes"
		}
		r.printf("| `%s` | %s | %s |\n", f.name, f.typ, opt)
	}
	r.printf("\n")
}

func (r *renderer) collect(t reflect.Type) []field {
	var out []field
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		if !sf.IsExported() {
			continue
		}
		tag := sf.Tag.Get("json")
		name, opts, _ := strings.Cut(tag, ",")
		if sf.Anonymous && name == "" && deref(sf.Type).Kind() == reflect.Struct {
			out = append(out, r.collect(deref(sf.Type))...)
			continue
		}
		if name == "-" {
			if sf.Type == eventType {
				// event.Subagent's wrapped event is written by the codec.
				out = append(out, field{name: "event", typ: "event (one wrapped event, never a `subagent`)"})
			}
			continue
		}
		if name == "" {
			name = sf.Name
		}
		out = append(out, field{name: name, typ: r.jsonType(sf.Type), optional: strings.Contains(opts, "omitempty")})
	}
	return out
}

// jsonType describes how a Go type is written in JSON.
func (r *renderer) jsonType(t reflect.Type) string {
	if t == rawType {
		return "JSON"
	}
	if t == eventType {
		return "event"
	}
	switch t.Kind() {
	case reflect.Pointer:
		return r.jsonType(t.Elem())
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "integer"
	case reflect.Float32, reflect.Float64:
		return "number"
	case reflect.Slice, reflect.Array:
		return "array of " + r.jsonType(t.Elem())
	case reflect.Map:
		return "object of " + r.jsonType(t.Elem())
	case reflect.Interface:
		return "any"
	case reflect.Struct:
		n := typeName(t)
		r.types[n] = t
		return fmt.Sprintf("[`%s`](#%s)", n, anchor(n))
	}
	return t.String()
}
