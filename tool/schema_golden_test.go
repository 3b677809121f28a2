package tool_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"testing"

	"github.com/agentpool/agentpool/spawn"
	"github.com/agentpool/agentpool/tool"
	"github.com/agentpool/agentpool/tool/code"
	"github.com/agentpool/agentpool/tool/files"
	"github.com/agentpool/agentpool/tool/search"
	"github.com/agentpool/agentpool/tool/shell"
	"github.com/agentpool/agentpool/tool/skills"
	"github.com/agentpool/agentpool/tool/todo"
	"github.com/agentpool/agentpool/tool/webfetch"
	"github.com/agentpool/agentpool/tool/workspace"
)

var update = flag.Bool("update", false, "rewrite testdata/schemas.golden")

// kinds covers what an argument struct may hold beyond the builtin
// tools' fields.
type kinds struct {
	S      string            `json:"s" jsonschema:"description=a string"`
	I      int               `json:"i,omitempty"`
	I8     int8              `json:"i8,omitempty"`
	U      uint32            `json:"u,omitempty"`
	F      float64           `json:"f,omitempty"`
	B      bool              `json:"b"`
	P      *string           `json:"p,omitempty"`
	List   []string          `json:"list,omitempty" jsonschema:"description=some strings"`
	Arr    [2]int            `json:"arr,omitempty"`
	Map    map[string]int    `json:"map,omitempty"`
	Nested nested            `json:"nested"`
	Items  []nested          `json:"items,omitempty"`
	PtrN   *nested           `json:"ptr_n,omitempty"`
	Any    any               `json:"any,omitempty"`
	Raw    json.RawMessage   `json:"raw,omitempty"`
	Mode   string            `json:"mode,omitempty" jsonschema:"enum=a,enum=b,description=one of two"`
	Skip   string            `json:"-"`
	NoTag  string            //nolint:tagliatelle // the Go name is the JSON name
	Dict   map[string]nested `json:"dict,omitempty"`
	embedded
	hidden string // unexported: never in the schema
}

// The field is there for the schema to leave out; this keeps it used.
var _ = kinds{hidden: ""}

type nested struct {
	X string `json:"x" jsonschema:"enum=p,enum=q"`
	Y int    `json:"y,omitempty"`
}

type embedded struct {
	E string `json:"e,omitempty" jsonschema:"description=from an embedded struct"`
}

// TestSchemaGolden: the parameter schemas of every builtin tool, and of
// a struct with every kind of field, are those of testdata/schemas.golden,
// byte for byte (key order included: it is what a model reads).
//
// The file was first made with github.com/invopop/jsonschema, which
// SchemaOf used before it made its own; the new schemas are identical
// except for two descriptions of TodoWrite (content, activeForm), which
// invopop cut at their first comma and SchemaOf keeps whole.
func TestSchemaGolden(t *testing.T) {
	ws, err := workspace.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	sh := shell.New(ws)
	defer sh.Close()
	var tools []tool.Tool
	tools = append(tools, spawn.SubagentTools()...)
	tools = append(tools, spawn.WorkerTool("helper", "Helps.", spawn.WorkerOptions{}))
	tools = append(tools, files.New(ws).Tools()...)
	tools = append(tools, sh.Tools()...)
	tools = append(tools, todo.New().Tools()...)
	tools = append(tools, skills.New(nil, 0).Tools()...)
	tools = append(tools, webfetch.New(webfetch.Options{}))
	tools = append(tools, code.New(ws).Tools()...)
	tavily := &search.Provider{Name: search.Tavily}
	searchTools, err := search.New(search.Options{Web: tavily, News: tavily})
	if err != nil {
		t.Fatal(err)
	}
	tools = append(tools, searchTools...)
	tools = append(tools, tool.New("kinds", "Every kind.", func(context.Context, tool.Call, kinds) (tool.Result, error) { return tool.Result{}, nil }))

	var got bytes.Buffer
	for _, tl := range tools {
		info := tl.Info()
		// Indented as made: the order of the keys is part of what a
		// model reads.
		var b bytes.Buffer
		if err := json.Indent(&b, info.Parameters, "", "  "); err != nil {
			t.Fatalf("%s: %v", info.Name, err)
		}
		got.WriteString("== " + info.Name + "\n" + b.String() + "\n")
	}
	const golden = "testdata/schemas.golden"
	if *update {
		if err := os.WriteFile(golden, got.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), want) {
		t.Errorf("schemas differ from %s (go test -run TestSchemaGolden -update to rewrite); got:\n%s", golden, got.String())
	}
}
