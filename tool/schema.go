package tool

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync/atomic"
)

// schemaBuilds counts SchemaOf's work, for the test that tool schemas are
// built on first use, not at package init.
var schemaBuilds atomic.Int64

// SchemaOf returns the JSON schema of A's struct, inlined (no $defs, no
// $ref): an object whose properties are A's exported fields under their
// `json` names, in field order (embedded structs' fields in place), with
// additionalProperties false, and required listing the fields without
// omitempty or omitzero. A field's `jsonschema` tag adds
// "description=..." and "enum=..." (repeated, one value each); a comma
// that does not start another key=value belongs to the description.
//
// Strings, booleans, integers (any size: "integer"), floats ("number"),
// pointers (as what they point to), slices and arrays ("array"; an array
// has minItems = maxItems = its length), maps with string keys ("object"
// with additionalProperties) and structs nest; an interface and
// json.RawMessage accept anything (the schema true). It panics on what
// JSON cannot carry (channels, functions, complex numbers, maps with other
// keys) and on a recursive type: both are mistakes in the tool's code.
//
// It is agentpool's own, small reflector rather than a library: the tools
// need this one shape, and a library brought about 20 packages (a YAML
// parser, an ordered map, go/parser for comments) into every program that
// makes a tool.
func SchemaOf[A any]() json.RawMessage {
	schemaBuilds.Add(1)
	t := reflect.TypeFor[A]()
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		panic(fmt.Sprintf("tool: SchemaOf[%s]: the arguments must be a struct", t))
	}
	var b bytes.Buffer
	w := schemaWriter{b: &b, seen: map[reflect.Type]bool{}}
	w.schema(t, fieldTag{})
	return b.Bytes()
}

// fieldTag is what a field's `jsonschema` tag says.
type fieldTag struct {
	description string
	enum        []string
}

// parseTag reads a `jsonschema` tag: comma-separated key=value parts,
// where a part that is not one continues the value before it (so a
// description may hold commas). Keys other than description and enum are
// ignored.
func parseTag(tag string) fieldTag {
	var ft fieldTag
	last := ""
	for part := range strings.SplitSeq(tag, ",") {
		key, val, ok := strings.Cut(part, "=")
		if !ok || strings.ContainsAny(key, " \t\"(") {
			switch last {
			case "description":
				ft.description += "," + part
			case "enum":
				ft.enum[len(ft.enum)-1] += "," + part
			}
			continue
		}
		switch key {
		case "description":
			ft.description = val
		case "enum":
			ft.enum = append(ft.enum, val)
		}
		last = key
	}
	return ft
}

// schemaWriter writes schemas as JSON, keys in a fixed order: items,
// properties, additionalProperties, type, enum, maxItems, minItems,
// required, description.
type schemaWriter struct {
	b    *bytes.Buffer
	seen map[reflect.Type]bool // structs being written, to refuse a cycle
}

var rawMessage = reflect.TypeFor[json.RawMessage]()

func (w schemaWriter) schema(t reflect.Type, ft fieldTag) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == rawMessage || t.Kind() == reflect.Interface {
		if ft.description == "" && ft.enum == nil {
			w.b.WriteString("true")
			return
		}
		w.b.WriteByte('{')
		w.tail(t, ft, false)
		w.b.WriteByte('}')
		return
	}
	w.b.WriteByte('{')
	switch t.Kind() {
	case reflect.String:
		w.typ("string")
	case reflect.Bool:
		w.typ("boolean")
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		w.typ("integer")
	case reflect.Float32, reflect.Float64:
		w.typ("number")
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 && t.Kind() == reflect.Slice {
			// encoding/json writes a []byte as a base64 string.
			w.typ("string")
			w.b.WriteString(`,"contentEncoding":"base64"`)
			break
		}
		w.b.WriteString(`"items":`)
		w.schema(t.Elem(), fieldTag{})
		w.b.WriteByte(',')
		w.typ("array")
		if t.Kind() == reflect.Array {
			fmt.Fprintf(w.b, `,"maxItems":%d,"minItems":%d`, t.Len(), t.Len())
		}
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			panic(fmt.Sprintf("tool: SchemaOf: %s: a map key must be a string", t))
		}
		w.b.WriteString(`"additionalProperties":`)
		w.schema(t.Elem(), fieldTag{})
		w.b.WriteByte(',')
		w.typ("object")
	case reflect.Struct:
		if w.seen[t] {
			panic(fmt.Sprintf("tool: SchemaOf: %s is recursive; inline schemas cannot describe it", t))
		}
		w.seen[t] = true
		w.object(t)
		delete(w.seen, t)
	default:
		panic(fmt.Sprintf("tool: SchemaOf: %s (%s) cannot be JSON", t, t.Kind()))
	}
	w.tail(t, ft, true)
	w.b.WriteByte('}')
}

func (w schemaWriter) typ(name string) { w.b.WriteString(`"type":"` + name + `"`) }

// tail writes the enum and description of a schema; comma says whether
// something was written before.
func (w schemaWriter) tail(t reflect.Type, ft fieldTag, comma bool) {
	sep := func() {
		if comma {
			w.b.WriteByte(',')
		}
		comma = true
	}
	if ft.enum != nil {
		sep()
		w.b.WriteString(`"enum":[`)
		for i, v := range ft.enum {
			if i > 0 {
				w.b.WriteByte(',')
			}
			w.b.Write(enumValue(t, v))
		}
		w.b.WriteByte(']')
	}
	if ft.description != "" {
		sep()
		w.b.WriteString(`"description":`)
		w.b.Write(jsonString(ft.description))
	}
}

// enumValue is an enum value as the field's type has it: a number for a
// numeric field whose value parses as one, else a string.
func enumValue(t reflect.Type, v string) []byte {
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		if _, err := strconv.ParseFloat(v, 64); err == nil {
			return []byte(v)
		}
	}
	return jsonString(v)
}

func jsonString(s string) []byte {
	b, _ := json.Marshal(s) // a string always marshals
	return b
}

// object writes the properties of struct t (embedded structs' fields in
// place, as encoding/json reads them), additionalProperties, type and
// required.
func (w schemaWriter) object(t reflect.Type) {
	var required []string
	w.b.WriteString(`"properties":{`)
	n := 0
	var fields func(t reflect.Type)
	fields = func(t reflect.Type) {
		for i := range t.NumField() {
			f := t.Field(i)
			tag := f.Tag.Get("json")
			if tag == "-" {
				continue
			}
			name, opts, _ := strings.Cut(tag, ",")
			if f.Anonymous && name == "" {
				et := f.Type
				if et.Kind() == reflect.Pointer {
					et = et.Elem()
				}
				if et.Kind() == reflect.Struct {
					fields(et)
					continue
				}
			}
			if !f.IsExported() {
				continue
			}
			if name == "" {
				name = f.Name
			}
			if n > 0 {
				w.b.WriteByte(',')
			}
			n++
			w.b.Write(jsonString(name))
			w.b.WriteByte(':')
			ft := parseTag(f.Tag.Get("jsonschema"))
			if d, ok := f.Tag.Lookup("jsonschema_description"); ok {
				ft.description = d // the whole tag: commas and all
			}
			w.schema(f.Type, ft)
			if !hasOpt(opts, "omitempty") && !hasOpt(opts, "omitzero") {
				required = append(required, name)
			}
		}
	}
	fields(t)
	w.b.WriteString(`},"additionalProperties":false,`)
	w.typ("object")
	if len(required) > 0 {
		w.b.WriteString(`,"required":[`)
		for i, r := range required {
			if i > 0 {
				w.b.WriteByte(',')
			}
			w.b.Write(jsonString(r))
		}
		w.b.WriteByte(']')
	}
}

// hasOpt reports whether a `json` tag's options (after the name) list opt.
func hasOpt(opts, opt string) bool {
	for o := range strings.SplitSeq(opts, ",") {
		if o == opt {
			return true
		}
	}
	return false
}
