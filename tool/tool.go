package tool

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/agentpool/agentpool/event"
)

// ACP tool kinds (docs/spec/EVENTS.md tool_call_start.kind).
const (
	KindRead       = "read"
	KindEdit       = "edit"
	KindDelete     = "delete"
	KindMove       = "move"
	KindSearch     = "search"
	KindExecute    = "execute"
	KindThink      = "think"
	KindFetch      = "fetch"
	KindSwitchMode = "switch_mode"
	KindOther      = "other"
)

// Info describes a tool to the model and to front ends.
type Info struct {
	Name        string
	Description string
	Parameters  json.RawMessage // JSON schema of the arguments object
	Kind        string          // ACP tool kind; "other" when empty
}

// Call is one invocation of a tool.
type Call struct {
	ID   string          // the tool call id the model gave
	Name string          // the tool name
	Args json.RawMessage // the arguments, a JSON object
	// SessionID is the session whose agent made the call ("" outside a
	// run). Tools that keep per-session state (files read, background
	// shells, todos) key it by this id.
	SessionID string
	// MessageID is the stored message that holds the call ("" when not
	// known): the checkpoint a file the call changes belongs to
	// (workspace.Checkpointer).
	MessageID string
}

// Location is a file a call reads or changes (event.Location).
type Location = event.Location

// Diff is a change a call made to a file (event.FileDiff).
type Diff = event.FileDiff

// Result is what goes back to the model. Only Content and IsError reach
// the model; Locations, Diffs and Metadata are for front ends (they travel
// in tool_call_complete).
type Result struct {
	Content   string
	IsError   bool
	Locations []Location
	Diffs     []Diff
	Metadata  map[string]any
}

// Locator is implemented by tools that can name, from a call's input, the
// files it will touch (shown by editors as the call starts).
type Locator interface {
	Locations(call Call) []Location
}

// Tool is something an agent can call.
type Tool interface {
	Info() Info
	Call(ctx context.Context, call Call) (Result, error)
}

// Titler is implemented by tools that describe a call in a human title
// (shown by front ends); the default title is the tool name.
type Titler interface {
	Title(call Call) string
}

// Errorf builds an error result.
func Errorf(format string, args ...any) Result {
	return Result{Content: fmt.Sprintf(format, args...), IsError: true}
}

// Run calls t and turns a returned error or a panic into an error Result.
func Run(ctx context.Context, t Tool, call Call) (res Result) {
	defer func() {
		if r := recover(); r != nil {
			res = Errorf("tool %s panicked: %v", call.Name, r)
		}
	}()
	r, err := t.Call(ctx, call)
	if err != nil {
		return Errorf("tool %s failed: %v", call.Name, err)
	}
	return r
}

// Locations returns the files a call will touch, when t knows them.
func Locations(t Tool, call Call) []Location {
	if l, ok := t.(Locator); ok {
		return l.Locations(call)
	}
	return nil
}

// Title returns the display title of a call.
func Title(t Tool, call Call) string {
	if tt, ok := t.(Titler); ok {
		if s := tt.Title(call); s != "" {
			return s
		}
	}
	return call.Name
}

// Func is a typed function tool: its arguments are decoded into A, whose
// struct yields the JSON schema shown to the model.
type funcTool[A any] struct {
	info   Info // without Parameters: see schema
	schema func() json.RawMessage
	fn     func(ctx context.Context, call Call, args A) (Result, error)
}

// New builds a typed tool. Use `json` tags for names and
// `jsonschema:"description=..."` tags for help (SchemaOf). The schema of
// A is reflected once, on the first Info: tools are often package-level
// values, and a program that never offers one to a model (or a test that
// never lists it) should not pay for reflecting it at init.
func New[A any](name, description string, fn func(ctx context.Context, call Call, args A) (Result, error)) Tool {
	return &funcTool[A]{
		info:   Info{Name: name, Description: description, Kind: KindOther},
		schema: sync.OnceValue(SchemaOf[A]),
		fn:     fn,
	}
}

// WithKind returns t with the given ACP kind. The result keeps t's
// optional interfaces (Titler, Locator).
func WithKind(t Tool, kind string) Tool {
	return kindTool{Tool: t, kind: kind}
}

type kindTool struct {
	Tool
	kind string
}

func (k kindTool) Info() Info {
	i := k.Tool.Info()
	i.Kind = k.kind
	return i
}

// Title forwards to the wrapped tool ("" when it has no Titler: the
// default title applies).
func (k kindTool) Title(c Call) string {
	if t, ok := k.Tool.(Titler); ok {
		return t.Title(c)
	}
	return ""
}

// Locations forwards to the wrapped tool.
func (k kindTool) Locations(c Call) []Location { return Locations(k.Tool, c) }

// WithTitle returns t with title as its Titler (a title of "" falls back
// to the tool name). The result keeps t's Locator.
func WithTitle(t Tool, title func(Call) string) Tool {
	return titleTool{Tool: t, title: title}
}

type titleTool struct {
	Tool
	title func(Call) string
}

func (t titleTool) Title(c Call) string         { return t.title(c) }
func (t titleTool) Locations(c Call) []Location { return Locations(t.Tool, c) }

func (f *funcTool[A]) Info() Info {
	info := f.info
	info.Parameters = f.schema()
	return info
}

func (f *funcTool[A]) Call(ctx context.Context, call Call) (Result, error) {
	var args A
	raw := call.Args
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = json.RawMessage("{}")
	}
	if err := json.Unmarshal(raw, &args); err != nil {
		return Errorf("invalid arguments for %s: %v", f.info.Name, err), nil
	}
	return f.fn(ctx, call, args)
}
