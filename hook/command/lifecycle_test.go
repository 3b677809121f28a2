package command_test

// The lifecycle as Claude Code hooks see it on delegating pools: one
// SessionStart and SessionEnd per session, UserPromptSubmit for the user's
// prompt only, a SubagentStop for every SubagentStart on every mechanism,
// and a team run as the root behaving as the main agent.

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/event/eventtest"
	"github.com/agentpool/agentpool/pool"
	"github.com/agentpool/agentpool/session"
)

// loggedEvents are the Claude Code events whose every payload the
// lifecycle tests keep, one file each (hooks of one event run
// concurrently: a shared file could interleave).
var loggedEvents = []string{"SessionStart", "SessionEnd", "UserPromptSubmit", "SubagentStart", "SubagentStop", "Stop"}

func loggingSettings(t *testing.T, extra map[string][]map[string]any) string {
	t.Helper()
	hooks := map[string][]map[string]any{}
	for _, ev := range loggedEvents {
		hooks[ev] = []map[string]any{group("", cmdHook(`mkdir -p "$CLAUDE_PROJECT_DIR/ev"; cat > "$(mktemp "$CLAUDE_PROJECT_DIR/ev/XXXXXXXX")"`))}
	}
	for ev, gs := range extra {
		hooks[ev] = append(hooks[ev], gs...)
	}
	return settingsJSON(t, hooks)
}

// logged returns the payloads the logging hooks kept, by event.
func (p *project) logged() map[string][]map[string]any {
	p.t.Helper()
	out := map[string][]map[string]any{}
	files, _ := filepath.Glob(filepath.Join(p.dir, "ev", "*"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			p.t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			p.t.Fatalf("payload %s: %v", b, err)
		}
		ev := m["hook_event_name"].(string)
		out[ev] = append(out[ev], m)
	}
	return out
}

func field(ps []map[string]any, name string) []string {
	var out []string
	for _, p := range ps {
		s, _ := p[name].(string)
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

const allMechanisms = `
agents:
  lead:
    tools: [subagent]
    workers: [w]
    model:
      type: scripted
      turns:
        - tool_calls: [{name: task, args: {agent_or_team: helper, prompt: "task prompt"}}]
        - tool_calls: [{name: ask_w, args: {prompt: "worker prompt"}}]
        - tool_calls: [{name: task, args: {agent_or_team: par, prompt: "par prompt"}}]
        - tool_calls: [{name: task, args: {agent_or_team: seq, prompt: "seq prompt"}}]
        - tool_calls: [{name: task, args: {agent_or_team: bg, prompt: "async prompt", async_mode: true}}]
        - tool_calls: [{name: task, args: {agent_or_team: broken, prompt: "broken prompt"}}]
        - tool_calls: [{name: task, args: {agent_or_team: nested, prompt: "nested prompt"}}]
        - "waiting"
        - "lead done"
  helper: {model: {type: scripted, turns: ["helper answer"]}}
  w: {model: {type: scripted, turns: ["worker answer"]}}
  bg: {model: {type: scripted, turns: ["async answer"]}}
  m1: {model: {type: scripted, turns: ["m1 answer"]}}
  m2: {model: {type: scripted, turns: ["m2 answer"]}}
  broken:
    tools: [subagent]
    max_turns: 1
    model:
      type: scripted
      turns:
        - tool_calls: [{name: list_available_nodes, args: {}}]
        - "never reached"
  nested:
    tools: [subagent]
    model:
      type: scripted
      turns:
        - tool_calls: [{name: task, args: {agent_or_team: seq, prompt: "inner prompt"}}]
        - "nested answer"
teams:
  par: {mode: parallel, members: [m1, m2]}
  seq: {mode: sequential, members: [m1, m2]}
`

// Every SubagentStart has its SubagentStop, once, on every mechanism: task,
// worker, async task, parallel and sequential teams (the team itself and
// its members), a team inside a subagent, and a subagent that fails (it
// ran out of turns: its SubagentStop fires when it ends). The user's prompt
// reaches UserPromptSubmit, the delegations' prompts do not; SessionStart,
// Stop and SessionEnd fire once.
func TestLifecyclePairsOnEveryMechanism(t *testing.T) {
	p := newProject(t, allMechanisms, loggingSettings(t, nil), nil)
	res := p.runNode("lead", "go")
	if res.Result.StopReason != event.StopCompleted {
		t.Fatalf("run ended %s: %v", res.Result.StopReason, res.Result.Err)
	}
	ev := p.logged()
	tree, err := session.Subtree(context.Background(), p.pool.Store(), res.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	var children []string
	for _, s := range tree[1:] {
		children = append(children, s.ID)
	}
	sort.Strings(children)
	starts, stops := field(ev["SubagentStart"], "agent_id"), field(ev["SubagentStop"], "agent_id")
	if strings.Join(starts, ",") != strings.Join(children, ",") || strings.Join(stops, ",") != strings.Join(children, ",") {
		t.Errorf("%d children, %d SubagentStart, %d SubagentStop:\nchildren %v\nstarts   %v\nstops    %v",
			len(children), len(starts), len(stops), children, starts, stops)
	}
	wantTypes := "bg,broken,helper,m1,m1,m1,m2,m2,m2,nested,par,seq,seq,w"
	types := field(ev["SubagentStart"], "agent_type")
	if strings.Join(types, ",") != wantTypes {
		t.Errorf("SubagentStart agent types %v, want %s", types, wantTypes)
	}
	for _, s := range ev["SubagentStop"] {
		if s["session_id"] != res.SessionID || s["agent_transcript_path"] == "" || s["transcript_path"] == "" {
			t.Errorf("SubagentStop payload %v", s)
		}
		if s["agent_type"] == "broken" && (s["last_assistant_message"] != "" || s["stop_hook_active"] != false) {
			t.Errorf("the failed subagent's SubagentStop %v", s)
		}
	}
	if got := field(ev["UserPromptSubmit"], "prompt"); strings.Join(got, "|") != "go" {
		t.Errorf("UserPromptSubmit prompts %q, want only the user's", got)
	}
	if len(ev["SessionStart"]) != 1 || ev["SessionStart"][0]["source"] != "startup" || ev["SessionStart"][0]["model"] != "test" {
		t.Errorf("SessionStart %v", ev["SessionStart"])
	}
	if len(ev["Stop"]) != 1 || ev["Stop"][0]["last_assistant_message"] != res.Result.Output {
		t.Errorf("Stop %v", ev["Stop"])
	}
	if len(ev["SessionEnd"]) != 1 || ev["SessionEnd"][0]["reason"] != "other" {
		t.Errorf("SessionEnd %v", ev["SessionEnd"])
	}
}

// A team run as the root is the main agent for its hooks: its prompt
// reaches UserPromptSubmit (once, not once per member), Stop fires with its
// output, and its members are paired subagents. The stream still ends with
// the team's final event (Stop's record is in the log only).
func TestLifecycleRootTeam(t *testing.T) {
	for _, team := range []string{"par", "seq"} {
		t.Run(team, func(t *testing.T) {
			p := newProject(t, allMechanisms, loggingSettings(t, nil), nil)
			sink, events := eventtest.Collect()
			res, err := p.pool.RunSink(context.Background(), pool.RunRequest{Node: team, Prompt: "team prompt"}, sink)
			if err != nil {
				t.Fatal(err)
			}
			if res.Result.StopReason != event.StopCompleted {
				t.Fatalf("run ended %s: %v", res.Result.StopReason, res.Result.Err)
			}
			if err := eventtest.CheckInvariants(res.SessionID, events()); err != nil {
				t.Error(err)
			}
			ev := p.logged()
			if got := field(ev["UserPromptSubmit"], "prompt"); strings.Join(got, "|") != "team prompt" {
				t.Errorf("UserPromptSubmit prompts %q", got)
			}
			if len(ev["Stop"]) != 1 || ev["Stop"][0]["last_assistant_message"] != res.Result.Output || ev["Stop"][0]["agent_id"] != nil {
				t.Fatalf("Stop %v (output %q)", ev["Stop"], res.Result.Output)
			}
			if s, e := field(ev["SubagentStart"], "agent_id"), field(ev["SubagentStop"], "agent_id"); len(s) != 2 || strings.Join(s, ",") != strings.Join(e, ",") {
				t.Errorf("members: starts %v, stops %v", s, e)
			}
			// The root team's transcript: its prompt and its output.
			var lines []string
			data, err := os.ReadFile(ev["Stop"][0]["transcript_path"].(string))
			if err != nil {
				t.Fatal(err)
			}
			for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
				var e struct {
					Type    string `json:"type"`
					Message struct {
						Content json.RawMessage `json:"content"`
					} `json:"message"`
				}
				json.Unmarshal([]byte(l), &e)
				lines = append(lines, e.Type+" "+string(e.Message.Content))
			}
			out, _ := json.Marshal(res.Result.Output)
			if want := `user "team prompt"|assistant [{"text":` + string(out) + `,"type":"text"}]`; strings.Join(lines, "|") != want {
				t.Errorf("team transcript:\n%s\nwant\n%s", strings.Join(lines, "|"), want)
			}
		})
	}
}

// A UserPromptSubmit guard blocks a root team's prompt: no member runs. It
// does not see (and cannot block) the prompts the delegations give.
func TestUserPromptSubmitGuardsOnlyTheUser(t *testing.T) {
	guard := `input=$(cat); case "$input" in *forbidden*|*"prompt\":\"task prompt"*) echo "no: $input" >&2; exit 2;; esac`
	p := newProject(t, allMechanisms, loggingSettings(t, map[string][]map[string]any{
		"UserPromptSubmit": {group("", cmdHook(guard))},
	}), nil)
	res := p.runNode("par", "something forbidden")
	if res.Result.StopReason != event.StopError || !strings.Contains(res.Result.Err.Error(), "prompt blocked") {
		t.Errorf("blocked team prompt: %s %v", res.Result.StopReason, res.Result.Err)
	}
	if kids := p.children(res.SessionID); len(kids) != 0 {
		t.Errorf("%d members ran", len(kids))
	}
	// The lead's delegation "task prompt" would match the guard: it never
	// reaches it.
	res = p.runNode("lead", "go")
	if res.Result.StopReason != event.StopCompleted {
		t.Errorf("an internal prompt was blocked: %s %v", res.Result.StopReason, res.Result.Err)
	}
}
