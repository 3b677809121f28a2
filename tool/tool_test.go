package tool_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/agentpool/agentpool/tool"
)

type greetArgs struct {
	Name  string `json:"name" jsonschema:"description=who to greet"`
	Times int    `json:"times,omitempty"`
}

func greet() tool.Tool {
	return tool.New("greet", "Greets someone.", func(_ context.Context, call tool.Call, a greetArgs) (tool.Result, error) {
		switch a.Name {
		case "error":
			return tool.Result{}, errors.New("cannot greet errors")
		case "panic":
			panic("greeting exploded")
		}
		return tool.Result{Content: strings.Repeat("hi "+a.Name+" ", max(1, a.Times)) + call.ID}, nil
	})
}

func TestSchemaFromStruct(t *testing.T) {
	info := greet().Info()
	var schema map[string]any
	if err := json.Unmarshal(info.Parameters, &schema); err != nil {
		t.Fatal(err)
	}
	if schema["type"] != "object" {
		t.Fatalf("schema type %v", schema["type"])
	}
	props := schema["properties"].(map[string]any)
	if props["name"].(map[string]any)["description"] != "who to greet" {
		t.Fatalf("description missing: %v", props)
	}
	if req := schema["required"].([]any); len(req) != 1 || req[0] != "name" {
		t.Fatalf("required %v", req)
	}
	if info.Kind != tool.KindOther {
		t.Fatalf("kind %q", info.Kind)
	}
}

func TestRunTurnsFailuresIntoResults(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		args    string
		isError bool
		want    string
	}{
		{`{"name":"ann","times":2}`, false, "hi ann hi ann cal_1"},
		{`{"name":"error"}`, true, "cannot greet errors"},
		{`{"name":"panic"}`, true, "panicked: greeting exploded"},
		{`{"name":`, true, "invalid arguments"},
		{``, false, "hi  cal_1"},
	}
	for _, c := range cases {
		res := tool.Run(ctx, greet(), tool.Call{ID: "cal_1", Name: "greet", Args: json.RawMessage(c.args)})
		if res.IsError != c.isError || !strings.Contains(res.Content, c.want) {
			t.Errorf("%s: got %+v, want error=%v containing %q", c.args, res, c.isError, c.want)
		}
	}
}

func TestWithKindAndTitle(t *testing.T) {
	k := tool.WithKind(greet(), tool.KindRead)
	if k.Info().Kind != tool.KindRead || k.Info().Name != "greet" {
		t.Fatalf("%+v", k.Info())
	}
	if got := tool.Title(k, tool.Call{Name: "greet"}); got != "greet" {
		t.Fatalf("title %q", got)
	}
}

type titledTool struct{ tool.Tool }

func (titledTool) Title(c tool.Call) string            { return "titled " + c.Name }
func (titledTool) Locations(tool.Call) []tool.Location { return []tool.Location{{Path: "/x"}} }

func TestWithKindKeepsOptionalInterfaces(t *testing.T) {
	base := tool.New("t", "d", func(context.Context, tool.Call, struct{}) (tool.Result, error) { return tool.Result{}, nil })
	k := tool.WithKind(titledTool{base}, tool.KindRead)
	c := tool.Call{Name: "t"}
	if k.Info().Kind != tool.KindRead || tool.Title(k, c) != "titled t" || len(tool.Locations(k, c)) != 1 {
		t.Errorf("kind %q title %q locations %v", k.Info().Kind, tool.Title(k, c), tool.Locations(k, c))
	}
	plain := tool.WithKind(base, tool.KindRead)
	if tool.Title(plain, c) != "t" || tool.Locations(plain, c) != nil {
		t.Errorf("a tool without them: title %q locations %v", tool.Title(plain, c), tool.Locations(plain, c))
	}
}
