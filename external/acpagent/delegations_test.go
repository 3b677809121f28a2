package acpagent_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agentpool/agentpool/batteries"
	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/hook"
	"github.com/agentpool/agentpool/internal/opencodetest"
	"github.com/agentpool/agentpool/model"
	"github.com/agentpool/agentpool/pool"
	"github.com/agentpool/agentpool/session"
)

// Every way the pool delegates reaches an ACP member (the test agent of
// this package, `type: acp` in a manifest, whose answer is the JSON of
// what it was prompted with): the task tool (sync and in the
// background), a worker, a parallel and a sequential team, and as the
// root. Each delegation is a child session of its caller, stored, with
// its spawn_session_start and spawn_session_end (the agent's final
// message as last_assistant_message) and the SubagentStart and
// SubagentStop hooks (subagent/start, subagent/end with the same
// last_assistant_message); the agent's final message is what the caller
// gets (the tool's result, the team's output, the run's output).
func TestEveryDelegationReachesAnACPMember(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	manifest := filepath.Join(dir, "agentpool.yaml")
	yaml := `
agents:
  ext:
    type: acp
    provider: custom
    command: ` + exe + `
    env: {` + testAgentEnv + `: "1"}
    description: the test agent
    requires_tool_confirmation: never
  native:
    model: {type: test, custom_output_text: "native answer"}
  by_task:
    model:
      type: scripted
      turns:
        - tool_calls: [{name: task, args: {agent_or_team: ext, prompt: "via task", description: "sync"}}]
        - text: "task done"
    tools: [{type: subagent}]
  by_background_task:
    model:
      type: scripted
      turns:
        - tool_calls: [{name: task, args: {agent_or_team: ext, prompt: "via background task", description: "async", async_mode: true}}]
        - text: "started it"
        - text: "background done"
    tools: [{type: subagent}]
  by_worker:
    model:
      type: scripted
      turns:
        - tool_calls: [{name: ask_ext, args: {prompt: "via worker"}}]
        - text: "worker done"
    workers: [ext]
teams:
  par: {mode: parallel, members: [native, ext]}
  seq: {mode: sequential, members: [native, ext]}
`
	if err := os.WriteFile(manifest, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	reg := batteries.Registry()
	m, err := config.LoadWith(manifest, batteries.ConfigOptions(reg))
	if err != nil {
		t.Fatal(err)
	}
	hooks := hook.New(hook.Options{})
	var mu sync.Mutex
	starts := map[string]hook.SubagentStart{} // by child session id
	ends := map[string]hook.SubagentEnd{}
	hooks.OnSubagentStart.Register(func(_ context.Context, e hook.SubagentStart) error {
		mu.Lock()
		defer mu.Unlock()
		starts[e.ID] = e
		return nil
	})
	hooks.OnSubagentEnd.Register(func(_ context.Context, e hook.SubagentEnd) error {
		mu.Lock()
		defer mu.Unlock()
		ends[e.ID] = e
		return nil
	})
	p, err := pool.New(m, pool.Options{Registry: reg, Hooks: hooks})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx := context.Background()

	cases := []struct {
		node, prompt string
		mechanism    event.Mechanism
		mode         event.RunMode
		asked        string // what ext is prompted with
		result       func(res pool.RunResult, evs []event.Event) string
	}{
		{"by_task", "go", event.MechanismTask, event.RunModeSync, "via task", toolResult("task")},
		{"by_background_task", "go", event.MechanismTask, event.RunModeAsync, "via background task", injected},
		{"by_worker", "go", event.MechanismWorker, event.RunModeSync, "via worker", toolResult("ask_ext")},
		{"par", "team prompt", event.MechanismSpawn, event.RunModeSync, "team prompt", output},
		{"seq", "team prompt", event.MechanismSpawn, event.RunModeSync, "native answer", output},
	}
	for _, c := range cases {
		t.Run(c.node, func(t *testing.T) {
			res, evs := run(t, ctx, p, c.node, c.prompt, nil)
			if res.Result.StopReason != event.StopCompleted {
				t.Fatalf("result %+v", res.Result)
			}
			var start event.SpawnSessionStart
			var end event.SpawnSessionEnd
			for _, e := range evs {
				switch v := e.(type) {
				case event.SpawnSessionStart:
					if v.SourceName == "ext" {
						start = v
					}
				case event.SpawnSessionEnd:
					if v.SourceName == "ext" {
						end = v
					}
				}
			}
			child := start.ChildSessionID
			if child == "" || start.ParentSessionID != res.SessionID || start.SpawnMechanism != c.mechanism || start.RunMode != c.mode {
				t.Fatalf("spawn_session_start %+v (root %s)", start, res.SessionID)
			}
			if end.ChildSessionID != child || end.StopReason != event.StopCompleted || !strings.Contains(end.LastAssistantMessage, `"prompt":"`+c.asked) {
				t.Errorf("spawn_session_end %+v, want the agent's answer to %q", end, c.asked)
			}
			s, err := p.Store().GetSession(ctx, child)
			if err != nil || s.ParentID != res.SessionID || s.AgentName != "ext" || s.Status != session.StatusCompleted {
				t.Errorf("stored child %+v, %v", s, err)
			}
			// The agent's final message is what the caller got.
			if got := c.result(res, evs); !strings.Contains(got, jsonQuoted(end.LastAssistantMessage)) && !strings.Contains(got, end.LastAssistantMessage) {
				t.Errorf("the caller got %q, not the agent's final message %q", got, end.LastAssistantMessage)
			}
			mu.Lock()
			hs, he := starts[child], ends[child]
			mu.Unlock()
			if hs.Name != "ext" || hs.ParentID != res.SessionID || hs.Mechanism != c.mechanism || hs.RunMode != c.mode {
				t.Errorf("subagent/start %+v", hs)
			}
			if he.Name != "ext" || he.StopReason != event.StopCompleted || partsText(he.LastAssistantMessage) != end.LastAssistantMessage {
				t.Errorf("subagent/end %+v, want last_assistant_message %q", he, end.LastAssistantMessage)
			}
		})
	}

	t.Run("root", func(t *testing.T) {
		res, evs := run(t, ctx, p, "ext", "as root", nil)
		if res.Result.StopReason != event.StopCompleted || !strings.Contains(res.Result.Output, `"prompt":"as root"`) {
			t.Fatalf("result %+v", res.Result)
		}
		if got := output(res, evs); got != res.Result.Output {
			t.Errorf("stream_complete %q, result %q", got, res.Result.Output)
		}
		s, err := p.Store().GetSession(ctx, res.SessionID)
		if err != nil || s.ParentID != "" || s.AgentName != "ext" || s.Status != session.StatusCompleted {
			t.Errorf("stored root %+v, %v", s, err)
		}
	})
}

// toolResult is the result of the root's call of tool name.
func toolResult(name string) func(pool.RunResult, []event.Event) string {
	return func(_ pool.RunResult, evs []event.Event) string {
		for _, e := range evs {
			if v, ok := e.(event.ToolCallComplete); ok && v.ToolName == name {
				return v.ToolResult
			}
		}
		return ""
	}
}

// injected is the message a background task's result was delivered in
// (the root's stored conversation: a synthetic user message).
func injected(res pool.RunResult, _ []event.Event) string {
	var all strings.Builder
	for _, m := range res.Result.Messages {
		if m.Role == model.RoleUser && m.Synthetic {
			all.WriteString(partsText(m.Parts))
		}
	}
	return all.String()
}

// output is the root's final message (its stream_complete).
func output(_ pool.RunResult, evs []event.Event) string {
	out := ""
	for _, e := range evs {
		if v, ok := e.(event.StreamComplete); ok {
			out = v.Message.Content
		}
	}
	return out
}

func partsText(parts []model.Part) string {
	var b strings.Builder
	for _, p := range parts {
		if p.Kind == model.PartText {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

// jsonQuoted is s as it appears inside a JSON string (without quotes).
func jsonQuoted(s string) string {
	q := quote(s)
	return q[1 : len(q)-1]
}

// The real opencode reached by the task tool and as a worker in one run
// (one opencode process serves both): each delegation a child session of
// the root with its spawn_session_start/end and hooks, opencode's final
// message the tool's result; no opencode process outlives the run.
func TestTaskAndWorkerReachOpencode(t *testing.T) {
	t.Parallel() // mostly waits on its agent processes
	const answer = "opencode answers the delegation."
	oc := opencodetest.NewSetup(t, opencodetest.NewModel(t, answer), "")
	dir := t.TempDir()
	manifest := filepath.Join(dir, "agentpool.yaml")
	yaml := `
agents:
` + oc.MemberYAML("opencode", "the real opencode") + `
  boss:
    model:
      type: scripted
      turns:
        - tool_calls: [{name: task, args: {agent_or_team: opencode, prompt: "Say something.", description: "via task"}}]
        - tool_calls: [{name: ask_opencode, args: {prompt: "Say something else."}}]
        - text: "boss done"
    tools: [{type: subagent}]
    workers: [opencode]
`
	if err := os.WriteFile(manifest, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	reg := batteries.Registry()
	m, err := config.LoadWith(manifest, batteries.ConfigOptions(reg))
	if err != nil {
		t.Fatal(err)
	}
	hooks := hook.New(hook.Options{})
	var mu sync.Mutex
	var ends []hook.SubagentEnd
	hooks.OnSubagentEnd.Register(func(_ context.Context, e hook.SubagentEnd) error {
		mu.Lock()
		defer mu.Unlock()
		ends = append(ends, e)
		return nil
	})
	p, err := pool.New(m, pool.Options{Registry: reg, Hooks: hooks})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	res, evs := run(t, context.Background(), p, "boss", "go", nil)
	if left := oc.Leftovers(); len(left) > 0 {
		t.Errorf("opencode processes outlived the run: %v", left)
	}
	if res.Result.StopReason != event.StopCompleted || res.Result.Output != "boss done" {
		t.Fatalf("result %+v", res.Result)
	}
	mechanisms := map[event.Mechanism]event.SpawnSessionEnd{}
	startMechanism := map[string]event.Mechanism{}
	for _, e := range evs {
		switch v := e.(type) {
		case event.SpawnSessionStart:
			if v.SourceName != "opencode" || v.ParentSessionID != res.SessionID {
				t.Errorf("spawn_session_start %+v", v)
			}
			startMechanism[v.ChildSessionID] = v.SpawnMechanism
		case event.SpawnSessionEnd:
			mechanisms[startMechanism[v.ChildSessionID]] = v
		}
	}
	for _, mech := range []event.Mechanism{event.MechanismTask, event.MechanismWorker} {
		if e := mechanisms[mech]; e.StopReason != event.StopCompleted || e.LastAssistantMessage != answer {
			t.Errorf("%s: spawn_session_end %+v", mech, e)
		}
	}
	for _, name := range []string{"task", "ask_opencode"} {
		if got := toolResult(name)(res, evs); !strings.Contains(got, answer) {
			t.Errorf("%s's result %q", name, got)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(ends) != 2 {
		t.Fatalf("subagent/end fired %d times", len(ends))
	}
	for _, e := range ends {
		if e.Name != "opencode" || partsText(e.LastAssistantMessage) != answer {
			t.Errorf("subagent/end %+v", e)
		}
	}
}
