package opencode

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentpool/agentpool/server/internal/servertest"
)

func modelPrompt(text, provider, model string) string {
	b, _ := json.Marshal(map[string]any{"parts": []any{map[string]any{"type": "text", "text": text}},
		"model": map[string]string{"providerID": provider, "modelID": model}})
	return string(b)
}

// assistantModels lists "provider/model" of a session's assistant
// messages, in order.
func assistantModels(t *testing.T, base, sid string) []string {
	t.Helper()
	var out []string
	for _, m := range arr(mustCall(t, 200, "GET", base+"/session/"+sid+"/message", "")) {
		if get(m, "info", "role") == "assistant" {
			out = append(out, str(get(m, "info", "providerID"))+"/"+str(get(m, "info", "modelID")))
		}
	}
	return out
}

// TestPromptModelChoice: a prompt that names another of the pool's models
// (the TUI's /models, opencode run --model) runs that turn of the root
// agent on it; its child keeps its own model; the next prompt without
// one runs on the agent's own again; the messages say which model
// answered, live and read back from the store.
func TestPromptModelChoice(t *testing.T) {
	noLeaks(t)
	p := newPool(t, servertest.ModelChoiceManifest)
	_, base := newServer(t, p, Options{})

	provs := mustCall(t, 200, "GET", base+"/provider", "")
	models := get(provs, "all")
	var offered []string
	for _, pv := range arr(models) {
		for id := range obj(get(pv, "models")) {
			offered = append(offered, str(get(pv, "id"))+"/"+id)
		}
	}
	for _, want := range []string{"agentpool/steady", "agentpool/planner", "agentpool/quick", "agentpool/team_parallel"} {
		if !strings.Contains(strings.Join(offered, " "), want) {
			t.Errorf("GET /provider offers %v, not %s", offered, want)
		}
	}

	sid := str(createSession(t, base, "")["id"])
	ans := mustCall(t, 200, "POST", base+"/session/"+sid+"/message", modelPrompt("Plan it", "agentpool", "planner"))
	mustMatchResponse(t, "post", "/session/{sessionID}/message", "200", ans)
	if get(ans, "info", "modelID") != "planner" || get(ans, "info", "providerID") != "agentpool" || get(ans, "info", "error") != nil {
		t.Fatalf("the answer: %v", get(ans, "info"))
	}
	if got := answerText(ans); got != "planned with help" {
		t.Fatalf("the chosen model's answer: %q", got)
	}
	// Every step of the turn ran on the chosen model; the user message
	// records the choice, as OpenCode's does.
	msgs := arr(mustCall(t, 200, "GET", base+"/session/"+sid+"/message", ""))
	if u := get(msgs[0], "info", "model"); get(u, "modelID") != "planner" {
		t.Errorf("the user message's model: %v", u)
	}
	if got := assistantModels(t, base, sid); strings.Join(got, ",") != "agentpool/planner,agentpool/planner" {
		t.Errorf("assistant messages of the turn: %v", got)
	}
	kids := arr(mustCall(t, 200, "GET", base+"/session/"+sid+"/children", ""))
	if len(kids) != 1 {
		t.Fatalf("%d children", len(kids))
	}
	kid := str(get(kids[0], "id"))
	if got := assistantModels(t, base, kid); strings.Join(got, ",") != "agentpool/quick" {
		t.Errorf("the child keeps its own model: %v", got)
	}
	// The priced test model costs: 15 $/M output tokens.
	if c, _ := get(arr(mustCall(t, 200, "GET", base+"/session/"+kid+"/message", ""))[1], "info", "cost").(float64); c <= 0 {
		t.Errorf("the priced child's answer costs %v", c)
	}

	// No model (or the agent's own): the agent's own.
	ans = mustCall(t, 200, "POST", base+"/session/"+sid+"/message", promptBody("Again"))
	if get(ans, "info", "modelID") != "steady" || answerText(ans) != "lead answers itself" {
		t.Fatalf("a prompt without a model: %v %q", get(ans, "info", "modelID"), answerText(ans))
	}
	ans = mustCall(t, 200, "POST", base+"/session/"+sid+"/message", modelPrompt("Once more", "agentpool", "steady"))
	if get(ans, "info", "modelID") != "steady" {
		t.Fatalf("a prompt with the agent's own model: %v", get(ans, "info", "modelID"))
	}
	live := assistantModels(t, base, sid)

	// Read back from the store by a server that never saw the runs.
	_, base2 := newServer(t, p, Options{})
	if got := assistantModels(t, base2, sid); strings.Join(got, ",") != strings.Join(live, ",") {
		t.Errorf("read back from the store: %v, live: %v", got, live)
	}

	// A command (the TUI's /init and project commands) names its model
	// as "provider/model".
	sid2 := str(createSession(t, base, "")["id"])
	cmd := `{"command":"init","arguments":"","agent":"lead","model":"agentpool/planner"}`
	ans = mustCall(t, 200, "POST", base+"/session/"+sid2+"/command", cmd)
	if get(ans, "info", "modelID") != "planner" || answerText(ans) != "planned with help" {
		t.Errorf("a command on a chosen model: %v %q", get(ans, "info", "modelID"), answerText(ans))
	}
}

// TestPromptModelRefused: a model the pool does not offer, a team's model
// for an agent and another model for a team are each a 400 that says
// why, on both prompt routes, and nothing runs.
func TestPromptModelRefused(t *testing.T) {
	noLeaks(t)
	p := newPool(t, servertest.ModelChoiceManifest)
	_, base := newServer(t, p, Options{})
	sid := str(createSession(t, base, "")["id"])
	for _, c := range []struct {
		body, want string
	}{
		{modelPrompt("hi", "openai", "gpt-4o"), "model openai/gpt-4o is not offered by this server; its models (GET /provider): agentpool/steady, agentpool/planner, agentpool/quick"},
		{modelPrompt("hi", "agentpool", "team_parallel"), "is the teams'"},
		{`{"agent":"crew","model":{"providerID":"agentpool","modelID":"quick"},"parts":[{"type":"text","text":"hi"}]}`, `agent "crew" is not a plain agent`},
		{`{"model":{"providerID":"agentpool"},"parts":[{"type":"text","text":"hi"}]}`, "not offered"},
	} {
		for _, route := range []string{"/message", "/prompt_async"} {
			code, v := call(t, "POST", base+"/session/"+sid+route, c.body)
			if msg := str(get(v, "data", "message")); code != 400 || get(v, "name") != "BadRequest" || !strings.Contains(msg, c.want) {
				t.Errorf("%s %s: %d %v, want 400 saying %q", route, c.body, code, v, c.want)
			}
		}
	}
	if code, v := call(t, "POST", base+"/session/"+sid+"/command", `{"command":"init","arguments":"","model":"gpt-4o"}`); code != 400 || !strings.Contains(str(get(v, "data", "message")), `"provider/model"`) {
		t.Errorf("a command's model without a provider: %d %v", code, v)
	}
	if msgs := arr(mustCall(t, 200, "GET", base+"/session/"+sid+"/message", "")); len(msgs) != 0 {
		t.Errorf("refused prompts left %d messages", len(msgs))
	}
	// The team's own model is the team's: it runs.
	ans := mustCall(t, 200, "POST", base+"/session/"+sid+"/message",
		`{"agent":"crew","model":{"providerID":"agentpool","modelID":"team_parallel"},"parts":[{"type":"text","text":"hi"}]}`)
	if get(ans, "info", "error") != nil {
		t.Errorf("a team prompt with its own model: %v", get(ans, "info"))
	}
}

// answerText joins the text parts of a {info, parts} answer.
func answerText(v any) string { return textOf(arr(get(v, "parts"))) }
