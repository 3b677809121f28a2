package opencode

import (
	"encoding/json"
	"net/http"
	"reflect"
	"strings"

	"github.com/agentpool/agentpool/server/opencode/internal/wire"
)

// unions are the anyOf components: interface-typed fields name them with
// a `union` tag.
var unions = map[string][]reflect.Type{
	"Message":      {typeOf[wire.UserMessage](), typeOf[wire.AssistantMessage]()},
	"Part":         {typeOf[wire.TextPart](), typeOf[wire.ReasoningPart](), typeOf[wire.ToolPart](), typeOf[wire.StepStartPart](), typeOf[wire.StepFinishPart](), typeOf[wire.AgentPart](), typeOf[wire.SubtaskPart]()},
	"ToolState":    {typeOf[wire.ToolStatePending](), typeOf[wire.ToolStateRunning](), typeOf[wire.ToolStateCompleted](), typeOf[wire.ToolStateError]()},
	"MessageError": {typeOf[wire.UnknownError](), typeOf[wire.MessageAbortedError]()},
}

// eventKinds are the events this server publishes on /event and
// /global/event: component name, type, properties.
var eventKinds = []struct {
	name, typ string
	props     reflect.Type
}{
	{"EventServerConnected", "server.connected", typeOf[connectedProps]()},
	{"EventSessionCreated", "session.created", typeOf[sessionInfoProps]()},
	{"EventSessionUpdated", "session.updated", typeOf[sessionInfoProps]()},
	{"EventSessionDeleted", "session.deleted", typeOf[sessionInfoProps]()},
	{"EventSessionStatus", "session.status", typeOf[sessionStatusProps]()},
	{"EventSessionIdle", "session.idle", typeOf[sessionIDProps]()},
	{"EventSessionError", "session.error", typeOf[sessionErrorProps]()},
	{"EventMessageUpdated", "message.updated", typeOf[messageProps]()},
	{"EventMessagePartUpdated", "message.part.updated", typeOf[partProps]()},
	{"EventMessageRemoved", "message.removed", typeOf[messageRemovedProps]()},
	{"EventMessagePartDelta", "message.part.delta", typeOf[deltaProps]()},
	{"EventTodoUpdated", "todo.updated", typeOf[todoProps]()},
	{"EventPermissionAsked", "permission.asked", typeOf[wire.PermissionRequest]()},
	{"EventPermissionReplied", "permission.replied", typeOf[wire.PermissionReplied]()},
}

// docGen builds JSON Schemas (OpenAPI 3.1 = JSON Schema 2020-12) from the
// wire types: exported named structs become components referenced with
// $ref; fields without omitempty are required.
type docGen struct {
	schemas map[string]any
}

func ref(name string) map[string]any { return map[string]any{"$ref": "#/components/schemas/" + name} }

func (g *docGen) schema(t reflect.Type) map[string]any {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == typeOf[json.RawMessage]() {
		return map[string]any{}
	}
	switch t.Kind() {
	case reflect.String:
		return map[string]any{"type": "string"}
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return map[string]any{"type": "integer"}
	case reflect.Float32, reflect.Float64:
		return map[string]any{"type": "number"}
	case reflect.Slice, reflect.Array:
		return map[string]any{"type": "array", "items": g.schema(t.Elem())}
	case reflect.Map:
		if t.Elem().Kind() == reflect.Interface {
			return map[string]any{"type": "object"}
		}
		return map[string]any{"type": "object", "additionalProperties": g.schema(t.Elem())}
	case reflect.Interface:
		return map[string]any{}
	case reflect.Struct:
		name := t.Name()
		if name == "" || !isExported(name) {
			return g.object(t)
		}
		if _, ok := g.schemas[name]; !ok {
			g.schemas[name] = nil // placeholder: recursion
			g.schemas[name] = g.object(t)
		}
		return ref(name)
	}
	return map[string]any{}
}

func isExported(name string) bool { return name[0] >= 'A' && name[0] <= 'Z' }

func (g *docGen) object(t reflect.Type) map[string]any {
	props := map[string]any{}
	required := []string{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if name == "" {
			name = f.Name
		}
		var fs map[string]any
		if u := f.Tag.Get("union"); u != "" {
			g.union(u)
			if f.Type.Kind() == reflect.Slice {
				fs = map[string]any{"type": "array", "items": ref(u)}
			} else {
				fs = ref(u)
			}
		} else {
			fs = g.schema(f.Type)
		}
		if typ := f.Tag.Get("type"); typ != "" {
			fs = map[string]any{"type": typ}
		}
		if e := f.Tag.Get("enum"); e != "" {
			var vals []any
			for _, v := range strings.Split(e, ",") {
				if f.Type.Kind() == reflect.Bool {
					vals = append(vals, v == "true")
				} else {
					vals = append(vals, v)
				}
			}
			fs["enum"] = vals
		}
		if p := f.Tag.Get("pattern"); p != "" {
			fs["pattern"] = p
		}
		props[name] = fs
		if !strings.Contains(opts, "omitempty") {
			required = append(required, name)
		}
	}
	out := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	if len(required) > 0 {
		out["required"] = required
	}
	return out
}

func (g *docGen) union(name string) {
	if _, ok := g.schemas[name]; ok {
		return
	}
	g.schemas[name] = nil
	var alts []any
	for _, t := range unions[name] {
		alts = append(alts, g.schema(t))
	}
	g.schemas[name] = map[string]any{"anyOf": alts}
}

// events adds the Event and GlobalEvent components.
func (g *docGen) events() {
	var all []any
	for _, k := range eventKinds {
		g.schemas[k.name] = map[string]any{
			"type": "object",
			"properties": map[string]any{
				"id":         map[string]any{"type": "string", "pattern": "^evt_"},
				"type":       map[string]any{"type": "string", "enum": []any{k.typ}},
				"properties": g.schema(k.props),
			},
			"required":             []string{"id", "type", "properties"},
			"additionalProperties": false,
		}
		all = append(all, ref(k.name))
	}
	g.schemas["Event"] = map[string]any{"anyOf": all}
	g.schemas["GlobalEvent"] = map[string]any{
		"type": "object",
		"properties": map[string]any{
			"directory": map[string]any{"type": "string"},
			"payload":   ref("Event"),
		},
		"required":             []string{"directory", "payload"},
		"additionalProperties": false,
	}
}

// openAPI builds the document of what the server serves, from its route
// table.
func (s *Server) openAPI() map[string]any {
	g := &docGen{schemas: map[string]any{}}
	g.events()
	for _, n := range []string{"Message", "Part", "ToolState", "MessageError"} {
		g.union(n)
	}
	notFound, badReq := g.schema(typeOf[wire.NotFoundError]()), g.schema(typeOf[wire.BadRequestError]())
	paths := map[string]any{}
	for _, rt := range s.routes {
		params := []any{}
		for _, seg := range strings.Split(rt.path, "/") {
			if strings.HasPrefix(seg, "{") {
				name := strings.Trim(seg, "{}")
				ps := map[string]any{"type": "string"}
				switch name {
				case "sessionID":
					ps["pattern"] = "^ses"
				case "requestID", "permissionID":
					ps["pattern"] = "^per"
				}
				params = append(params, map[string]any{"name": name, "in": "path", "required": true, "schema": ps})
			}
		}
		params = append(params, map[string]any{"name": "directory", "in": "query", "required": false, "schema": strParam,
			"description": "the project directory (the SDK sends it as the x-opencode-directory header on writes)"})
		for _, q := range rt.query {
			params = append(params, map[string]any{"name": q.name, "in": "query", "required": false, "schema": q.schema, "description": q.desc})
		}
		op := map[string]any{"tags": []string{rt.tag}, "operationId": rt.op, "summary": rt.summary, "parameters": params}
		if rt.body != nil {
			op["requestBody"] = map[string]any{"required": !rt.bodyOptional, "content": map[string]any{"application/json": map[string]any{"schema": g.schema(rt.body)}}}
		}
		status := rt.status
		if status == 0 {
			status = http.StatusOK
		}
		responses := map[string]any{}
		ok := map[string]any{"description": rt.summary}
		switch {
		case rt.sse != "":
			ok["content"] = map[string]any{"text/event-stream": map[string]any{"schema": ref(rt.sse)}}
		case rt.respSchema != nil:
			ok["content"] = map[string]any{"application/json": map[string]any{"schema": rt.respSchema}}
		case rt.resp != nil:
			ok["content"] = map[string]any{"application/json": map[string]any{"schema": g.schema(rt.resp)}}
		}
		responses[itoa(status)] = ok
		for _, e := range rt.errs {
			if ts := rt.errTypes[e]; len(ts) > 0 {
				var alts []any
				var names []string
				for _, t := range ts {
					alts = append(alts, g.schema(t))
					names = append(names, t.Name())
				}
				schema, _ := alts[0].(map[string]any)
				if len(alts) > 1 {
					schema = map[string]any{"anyOf": alts}
				}
				responses[itoa(e)] = map[string]any{"description": strings.Join(names, " | "), "content": map[string]any{"application/json": map[string]any{"schema": schema}}}
				continue
			}
			switch e {
			case http.StatusNotFound:
				responses["404"] = map[string]any{"description": "NotFoundError", "content": map[string]any{"application/json": map[string]any{"schema": notFound}}}
			case http.StatusBadRequest:
				responses["400"] = map[string]any{"description": "Bad request", "content": map[string]any{"application/json": map[string]any{"schema": badReq}}}
			case http.StatusConflict:
				responses["409"] = map[string]any{"description": "SessionBusyError", "content": map[string]any{"application/json": map[string]any{"schema": g.schema(typeOf[wire.SessionBusyError]())}}}
			case http.StatusRequestEntityTooLarge:
				responses["413"] = map[string]any{"description": "Request body too large", "content": map[string]any{"application/json": map[string]any{"schema": badReq}}}
			case http.StatusRequestTimeout:
				responses["408"] = map[string]any{"description": "Request body not received in time", "content": map[string]any{"application/json": map[string]any{"schema": badReq}}}
			case http.StatusTooManyRequests:
				responses["429"] = map[string]any{"description": "QueueFullError", "content": map[string]any{"application/json": map[string]any{"schema": g.schema(typeOf[wire.QueueFullError]())}}}
			}
		}
		op["responses"] = responses
		item, _ := paths[rt.path].(map[string]any)
		if item == nil {
			item = map[string]any{}
			paths[rt.path] = item
		}
		item[strings.ToLower(rt.method)] = op
	}
	return map[string]any{
		"openapi": "3.1.0",
		"info": map[string]any{
			"title":       "agentpool opencode server",
			"version":     s.opts.Version,
			"description": "The OpenCode server API (opencode 1.18.33) as served by agentpool: sessions, messages, prompts and events of the pool's session tree.",
		},
		"paths":      paths,
		"components": map[string]any{"schemas": g.schemas},
	}
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

func (s *Server) handleDoc(w http.ResponseWriter, r *http.Request) {
	b, err := json.Marshal(s.openAPI())
	if err != nil {
		internalError(w, err)
		return
	}
	writeRaw(w, http.StatusOK, b)
}
