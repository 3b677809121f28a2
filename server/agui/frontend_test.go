package agui

import (
	"context"
	"encoding/json"
	"iter"
	"strings"
	"testing"

	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/model"
	"github.com/agentpool/agentpool/pool"
	"github.com/agentpool/agentpool/server/internal/servertest"
)

// echoSystem answers every request with what the model was given: its
// system prompt and the names of the tools offered.
type echoSystem struct{}

func (echoSystem) ID() string { return "echo-system" }

func (echoSystem) Stream(_ context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
	return func(yield func(model.Chunk, error) bool) {
		names := make([]string, len(req.Tools))
		for i, t := range req.Tools {
			names[i] = t.Name
		}
		text := "system: " + req.System + "\ntools: " + strings.Join(names, ",")
		if yield(model.Chunk{Kind: model.ChunkText, Text: text}, nil) {
			yield(model.Chunk{Kind: model.ChunkFinish, FinishReason: model.FinishStop}, nil)
		}
	}
}

const frontendYAML = `
default_agent: helper
agents:
  helper:
    model: {type: test}
  echo:
    system_prompt: You help with travel.
    model: {type: echo}
  planner:
    model: {type: test}
    tools: [{type: plan}]
teams:
  pair:
    mode: parallel
    members: [helper, echo]
`

func frontendPool(t *testing.T) *pool.Pool {
	reg := pool.NewRegistry().AddModel("echo", func(config.ModelSpec) (model.Model, error) { return echoSystem{}, nil })
	return servertest.PoolWith(t, frontendYAML, pool.Options{Registry: reg})
}

func inputBody(t *testing.T, thread string, extra map[string]any, msgs ...map[string]any) string {
	t.Helper()
	in := map[string]any{"threadId": thread, "runId": "run-" + thread, "messages": msgs}
	for k, v := range extra {
		in[k] = v
	}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func user(id, text string) map[string]any {
	return map[string]any{"id": id, "role": "user", "content": text}
}

func lastEvent(t *testing.T, evs []ev) ev {
	t.Helper()
	if len(evs) == 0 {
		t.Fatal("no events")
	}
	return evs[len(evs)-1]
}

func TestContextReachesTheModel(t *testing.T) {
	_, ts := newServer(t, frontendPool(t), Options{})
	ctxs := []map[string]any{
		{"description": "the user's city", "value": "Paris"},
		{"description": "units", "value": "metric\nand 24-hour clock"},
	}
	evs := runOK(t, ts.URL+"/agents/echo", inputBody(t, "th-ctx", map[string]any{"context": ctxs}, user("m1", "Plan a day.")))
	end := lastEvent(t, evs)
	res, _ := end["result"].(string)
	if end["type"] != "RUN_FINISHED" {
		t.Fatalf("last event %v", end)
	}
	for _, want := range []string{
		"system: You help with travel.\n\n",
		"<context description=\"the user's city\">\nParis\n</context>",
		"<context description=\"units\">\nmetric\nand 24-hour clock\n</context>",
	} {
		if !strings.Contains(res, want) {
			t.Errorf("the model did not see %q; it saw:\n%s", want, res)
		}
	}
	// The context is the run's alone: the next run without it does not
	// see it (it is not stored in the conversation).
	evs = runOK(t, ts.URL+"/agents/echo", inputBody(t, "th-ctx", nil, user("m2", "And tomorrow?")))
	if res, _ := lastEvent(t, evs)["result"].(string); strings.Contains(res, "Paris") || !strings.Contains(res, "You help with travel.") {
		t.Errorf("second run saw: %s", res)
	}
}

func TestFrontEndToolRoundTrip(t *testing.T) {
	p := frontendPool(t)
	_, ts := newServer(t, p, Options{})
	tools := []map[string]any{{
		"name": "getWeather", "description": "The weather in a city, from the user's browser.",
		"parameters": map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}, "required": []string{"city"}},
	}}
	first := user("m1", "What is the weather?")
	evs := runOK(t, ts.URL+"/", inputBody(t, "th-tools", map[string]any{"tools": tools}, first))
	var callID, args string
	for _, e := range evs {
		switch e["type"] {
		case "TOOL_CALL_START":
			if e["toolCallName"] != "getWeather" {
				t.Fatalf("call of %v", e["toolCallName"])
			}
			callID = e["toolCallId"].(string)
		case "TOOL_CALL_ARGS":
			args += e["delta"].(string)
		case "TOOL_CALL_RESULT":
			t.Fatalf("the server answered the client's tool: %v", e)
		}
	}
	end := lastEvent(t, evs)
	if callID == "" || end["type"] != "RUN_FINISHED" || end["result"] != nil {
		t.Fatalf("want a getWeather call and a RUN_FINISHED without result; got call %q, last %v", callID, end)
	}
	if !json.Valid([]byte(args)) || !strings.Contains(args, `"city"`) {
		t.Errorf("args %q", args)
	}

	// The client ran it: its next run carries the tool message.
	assistant := map[string]any{"id": "a1", "role": "assistant", "toolCalls": []any{map[string]any{
		"id": callID, "type": "function", "function": map[string]any{"name": "getWeather", "arguments": args}}}}
	result := map[string]any{"id": "t1", "role": "tool", "toolCallId": callID, "content": "sunny, 21 C"}
	evs = runOK(t, ts.URL+"/", inputBody(t, "th-tools", map[string]any{"tools": tools}, first, assistant, result))
	end = lastEvent(t, evs)
	if res, _ := end["result"].(string); end["type"] != "RUN_FINISHED" || !strings.Contains(res, "sunny, 21 C") {
		t.Fatalf("the answer does not use the result: %v", end)
	}
	for _, e := range evs {
		if e["type"] == "TOOL_CALL_RESULT" || e["type"] == "TOOL_CALL_START" {
			t.Errorf("second run: %v", e)
		}
	}

	// The session keeps the call and its result as any tool's.
	root := rootOf(t, p.Store(), "th-tools")
	msgs, err := p.Store().Messages(context.Background(), root.ID)
	if err != nil {
		t.Fatal(err)
	}
	var roles []string
	for _, m := range msgs {
		roles = append(roles, string(m.Role))
	}
	if got := strings.Join(roles, ","); got != "user,assistant,tool,assistant" {
		t.Fatalf("stored conversation %s", got)
	}
	if r := msgs[2].Parts[0]; r.ToolCallID != callID || r.Text != "sunny, 21 C" || r.IsError {
		t.Errorf("stored result %+v", r)
	}
	log, err := p.Store().Events(context.Background(), root.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	var complete *event.ToolCallComplete
	for _, e := range log {
		if c, ok := e.Event.(event.ToolCallComplete); ok && c.ToolCallID == callID {
			complete = &c
		}
	}
	if complete == nil || complete.ToolResult != "sunny, 21 C" || complete.ToolName != "getWeather" {
		t.Errorf("log's tool_call_complete %+v", complete)
	}
}

func TestFrontEndBadInput(t *testing.T) {
	_, ts := newServer(t, frontendPool(t), Options{})
	big := strings.Repeat("x", MaxContextBytes+1)
	many := make([]map[string]any, MaxContextEntries+1)
	for i := range many {
		many[i] = map[string]any{"description": "d", "value": "v"}
	}
	tool := func(name string) []map[string]any { return []map[string]any{{"name": name, "description": "d"}} }
	for _, c := range []struct {
		name, path string
		extra      map[string]any
		want       string
	}{
		{"clash", "/agents/planner", map[string]any{"tools": tool("TodoWrite")}, `"TodoWrite": agent planner has a tool of that name`},
		{"bad name", "/", map[string]any{"tools": tool("get weather")}, `tools[0].name "get weather"`},
		{"twice", "/", map[string]any{"tools": append(tool("a"), tool("a")...)}, "given twice"},
		{"params", "/", map[string]any{"tools": []map[string]any{{"name": "a", "description": "d", "parameters": "x"}}}, "expected a JSON schema object"},
		{"not an array", "/", map[string]any{"tools": map[string]any{}}, `field "tools": expected an array`},
		{"big context", "/", map[string]any{"context": []map[string]any{{"description": "d", "value": big}}}, "more than the 65536 allowed for one entry"},
		{"many contexts", "/", map[string]any{"context": many}, "context has 65 entries, more than the 64 allowed"},
		{"resume", "/", map[string]any{"resume": []map[string]any{{"interruptId": "per_1", "status": "resolved"}}}, "resume: this server never ends a run with an interrupt"},
		{"team", "/agents/pair", map[string]any{"context": []map[string]any{{"description": "d", "value": "v"}}}, `"pair" is a team_parallel, not a plain agent`},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := post(t, ts.URL+c.path, inputBody(t, "th-bad-"+c.name, c.extra, user("m1", "hi")))
			var body struct{ Error string }
			if err := json.Unmarshal([]byte(a.Body), &body); err != nil || a.Code != 400 || !strings.Contains(body.Error, c.want) {
				t.Errorf("status %d %s; want 400 with %q", a.Code, a.Body, c.want)
			}
		})
	}
}
