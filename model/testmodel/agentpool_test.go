package testmodel_test

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/agentpool/agentpool/model"
	"github.com/agentpool/agentpool/model/testmodel"
)

// stream plays one request and returns the text, the calls (name and JSON
// arguments) and the finish reason.
func stream(t *testing.T, m model.Model, req *model.Request) (text string, calls [][2]string, finish string) {
	t.Helper()
	var args []strings.Builder
	for c, err := range m.Stream(context.Background(), req) {
		if err != nil {
			t.Fatal(err)
		}
		switch c.Kind {
		case model.ChunkText:
			text += c.Text
		case model.ChunkToolCall:
			if c.ToolName != "" {
				calls = append(calls, [2]string{c.ToolName})
				args = append(args, strings.Builder{})
			}
			args[c.Index].WriteString(c.ArgsDelta)
		case model.ChunkFinish:
			finish = c.FinishReason
		}
	}
	for i := range calls {
		calls[i][1] = args[i].String()
	}
	return text, calls, finish
}

var (
	todoSchema = json.RawMessage(`{"type":"object","properties":{"todos":{"type":"array","items":{"type":"object","properties":{"content":{"type":"string"},"status":{"type":"string","enum":["pending","in_progress","completed"]}},"required":["content","status"]}}},"required":["todos"]}`)
	nodeSchema = json.RawMessage(`{"type":"object","properties":{"node_type":{"type":"string","enum":["all","agent","team"]},"only_idle":{"type":"boolean"},"limit":{"type":"integer","minimum":1,"maximum":5}}}`)
	tools      = []model.ToolSpec{{Name: "TodoWrite", Parameters: todoSchema}, {Name: "list_nodes", Parameters: nodeSchema}}
)

// With CallAll (the manifest's default) the first answer calls every tool
// offered, with ToolArgs or arguments made from the tool's schema; the
// next answers with a summary of the results.
func TestCallAllTools(t *testing.T) {
	m, err := testmodel.New(testmodel.Config{CallAll: true, ToolArgs: map[string]map[string]any{"list_nodes": {"node_type": "team"}}})
	if err != nil {
		t.Fatal(err)
	}
	prompt := model.UserText("go")
	text, calls, finish := stream(t, m, &model.Request{Messages: []model.Message{prompt}, Tools: tools})
	want := [][2]string{
		{"TodoWrite", `{"todos":[{"content":"a","status":"pending"}]}`},
		{"list_nodes", `{"node_type":"team"}`},
	}
	if text != "" || !reflect.DeepEqual(calls, want) || finish != model.FinishToolCalls {
		t.Fatalf("first answer: %q %v %s", text, calls, finish)
	}
	msgs := []model.Message{prompt,
		{Role: model.RoleAssistant, Parts: []model.Part{{Kind: model.PartToolCall, ToolName: "TodoWrite"}, {Kind: model.PartToolCall, ToolName: "list_nodes"}}},
		{Role: model.RoleTool, Parts: []model.Part{
			{Kind: model.PartToolResult, ToolName: "TodoWrite", Text: "Todo list updated."},
			{Kind: model.PartToolResult, ToolName: "list_nodes", Text: `[{"name":"crew"}]`},
		}},
	}
	text, calls, _ = stream(t, m, &model.Request{Messages: msgs, Tools: tools})
	if text != `{"TodoWrite":"Todo list updated.","list_nodes":[{"name":"crew"}]}` || calls != nil {
		t.Errorf("second answer: %q %v", text, calls)
	}
	// A new prompt starts over.
	msgs = append(msgs, model.Message{Role: model.RoleAssistant, Parts: []model.Part{{Kind: model.PartText, Text: text}}}, model.UserText("again"))
	if _, calls, _ = stream(t, m, &model.Request{Messages: msgs, Tools: tools}); len(calls) != 2 {
		t.Errorf("after a new prompt: %v", calls)
	}
	// No tools offered: a reply that quotes the prompt.
	if text, calls, _ = stream(t, m, &model.Request{Messages: []model.Message{prompt}}); calls != nil || text != "Test model reply to: go" {
		t.Errorf("without tools: %q %v", text, calls)
	}
}

// The seed changes the generated arguments; a listed tool is called even
// when the request does not offer it (the agent then reports it unknown).
func TestSeedAndListedTools(t *testing.T) {
	m, _ := testmodel.New(testmodel.Config{CallTools: []string{"list_nodes", "ghost"}, Seed: 28})
	_, calls, _ := stream(t, m, &model.Request{Messages: []model.Message{model.UserText("go")}, Tools: tools})
	want := [][2]string{{"list_nodes", `{"limit":1,"node_type":"agent","only_idle":false}`}, {"ghost", `{}`}}
	if !reflect.DeepEqual(calls, want) {
		t.Errorf("calls = %v, want %v", calls, want)
	}
	none, _ := testmodel.New(testmodel.Config{CallTools: []string{}})
	if _, calls, _ := stream(t, none, &model.Request{Messages: []model.Message{model.UserText("go")}, Tools: tools}); calls != nil {
		t.Errorf("CallTools [] called %v", calls)
	}
}

// A structured output is answered with a value made from its schema,
// unless the text is set.
func TestStructuredOutput(t *testing.T) {
	m, _ := testmodel.New(testmodel.Config{CallAll: true})
	req := &model.Request{Messages: []model.Message{model.UserText("go")}, Output: &model.OutputSchema{Name: "r", Schema: json.RawMessage(`{"type":"object","properties":{"score":{"type":"integer","minimum":3},"tags":{"type":"array","items":{"type":"string"},"minItems":2},"when":{"type":"string","format":"date"}},"required":["score"]}`)}}
	text, _, _ := stream(t, m, req)
	if text != `{"score":3,"tags":["a","a"],"when":"2024-01-01"}` {
		t.Errorf("structured answer = %s", text)
	}
	fixed, _ := testmodel.New(testmodel.Config{Text: `{"score":9}`})
	if text, _, _ := stream(t, fixed, req); text != `{"score":9}` {
		t.Errorf("with Text: %s", text)
	}
}

func TestGenerate(t *testing.T) {
	for schema, want := range map[string]string{
		`{"type":"string","minLength":3}`:                                             `"aaa"`,
		`{"type":"number","exclusiveMinimum":1.5}`:                                    `2.5`,
		`{"type":["null","boolean"]}`:                                                 `false`,
		`{"anyOf":[{"type":"integer"},{"type":"null"}]}`:                              `0`,
		`{"type":"object","additionalProperties":{"type":"number"}}`:                  `{"additionalProperty":0}`,
		`{"$defs":{"x":{"type":"string","const":"k"}},"$ref":"#/$defs/x"}`:            `"k"`,
		`{"type":"array","items":{"type":"integer"},"uniqueItems":true,"minItems":3}`: `[0,1,2]`,
		`not json`: `{}`,
	} {
		b, _ := json.Marshal(testmodel.Generate(json.RawMessage(schema), 0))
		if string(b) != want {
			t.Errorf("Generate(%s) = %s, want %s", schema, b, want)
		}
	}
	if b, _ := json.Marshal(testmodel.Generate(json.RawMessage(`{"type":"string"}`), 27)); string(b) != `"ab"` {
		t.Errorf("seed 27 = %s", b)
	}
}
