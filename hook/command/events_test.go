package command_test

// Claude Code's payloads and decisions for the events and fields scripts
// rely on: Task in Claude Code's vocabulary, PostToolUseFailure,
// duration_ms, PermissionRequest and Notification, Stop's
// additionalContext, SessionStart's model and CLAUDE_ENV_FILE.

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/hook"
	"github.com/agentpool/agentpool/tool"
)

// logTo is a hook that appends its payload to name.jsonl in the project.
func logTo(name string) map[string]any {
	return cmdHook(`cat >> "$CLAUDE_PROJECT_DIR/` + name + `.jsonl"; echo >> "$CLAUDE_PROJECT_DIR/` + name + `.jsonl"`)
}

// nonEmpty drops the blank lines logTo writes between payloads.
func (p *project) logged1(name string) []map[string]any {
	p.t.Helper()
	data, err := os.ReadFile(filepath.Join(p.dir, name+".jsonl"))
	if err != nil {
		p.t.Fatal(err)
	}
	var out []map[string]any
	for _, l := range strings.Split(string(data), "\n") {
		if strings.TrimSpace(l) == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			p.t.Fatalf("%q: %v", l, err)
		}
		out = append(out, m)
	}
	return out
}

// The task tool is Claude Code's Task for hooks: tool_name "Task", input
// subagent_type / prompt / description; matchers "Task", "Agent" and
// agentpool's "task" select it; an updatedInput in Task's vocabulary
// changes the delegation.
func TestTaskInClaudeCodeVocabulary(t *testing.T) {
	redirect := `{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow","updatedInput":{"subagent_type":"other","prompt":"changed prompt","description":"d"}}}`
	p := newProject(t, `
agents:
  lead:
    tools: [subagent]
    model:
      type: scripted
      turns:
        - tool_calls: [{name: task, args: {agent_or_team: helper, prompt: "Help.", description: "ask for help"}}]
        - "lead done"
  helper: {model: {type: scripted, turns: ["helper answer"]}}
  other: {model: {type: scripted, turns: ["other answer"]}}
`, settingsJSON(t, map[string][]map[string]any{
		"PreToolUse": {
			group("Task", logTo("task")), group("Agent", logTo("agent")), group("task", logTo("lower")),
			group("Task", cmdHook("echo '"+redirect+"'")),
		},
		"PostToolUse": {group("Task", logTo("post"))},
	}), nil)
	res := p.runNode("lead", "go")
	for _, name := range []string{"task", "agent", "lower"} {
		pl := p.logged1(name)
		if len(pl) != 1 || pl[0]["tool_name"] != "Task" {
			t.Fatalf("matcher %s: %v", name, pl)
		}
	}
	in, _ := json.Marshal(p.logged1("task")[0]["tool_input"])
	if string(in) != `{"description":"ask for help","prompt":"Help.","subagent_type":"helper"}` {
		t.Errorf("tool_input %s", in)
	}
	kids := p.children(res.SessionID)
	if len(kids) != 1 || kids[0].AgentName != "other" {
		t.Fatalf("the updatedInput did not redirect the delegation: %+v", kids)
	}
	if ms := p.messages(kids[0].ID); len(ms) == 0 || ms[0].Text() != "changed prompt" {
		t.Errorf("the child's prompt %+v", ms)
	}
	post := p.logged1("post")
	resp, _ := post[0]["tool_response"].(map[string]any)
	content, _ := resp["content"].([]any)
	if len(post) != 1 || len(content) != 1 || content[0].(map[string]any)["text"] != "other answer" {
		t.Errorf("PostToolUse tool_response %v", post)
	}
}

// failing is a tool that fails.
type failing struct{}

func (failing) Info() tool.Info {
	return tool.Info{Name: "flaky", Description: "fails", Parameters: []byte(`{"type":"object"}`)}
}

func (failing) Call(context.Context, tool.Call) (tool.Result, error) {
	return tool.Result{Content: "disk on fire", IsError: true}, nil
}

// A tool that fails fires PostToolUseFailure (error, is_interrupt,
// duration_ms), not PostToolUse, as in Claude Code; a tool that succeeds
// fires PostToolUse with duration_ms.
func TestPostToolUseFailure(t *testing.T) {
	p := newProject(t, `
agents:
  main:
    model:
      type: scripted
      turns:
        - tool_calls: [{name: flaky, args: {}}, {name: probe, args: {x: 1}}]
        - "done"
`, settingsJSON(t, map[string][]map[string]any{
		"PostToolUse":        {group("*", logTo("post"))},
		"PostToolUseFailure": {group("flaky", logTo("failure"), cmdHook(`echo '{"hookSpecificOutput":{"hookEventName":"PostToolUseFailure","additionalContext":"THE DISK NEEDS A LOOK"}}'`))},
	}), nil, failing{}, &probe{})
	res := p.runNode("main", "go")
	if res.Result.StopReason != event.StopCompleted {
		t.Fatalf("run ended %s: %v", res.Result.StopReason, res.Result.Err)
	}
	post, failure := p.logged1("post"), p.logged1("failure")
	if len(post) != 1 || post[0]["tool_name"] != "probe" {
		t.Errorf("PostToolUse %v", post)
	}
	if _, ok := post[0]["duration_ms"].(float64); !ok {
		t.Errorf("PostToolUse without duration_ms: %v", post[0])
	}
	if len(failure) != 1 || failure[0]["tool_name"] != "flaky" || failure[0]["error"] != "disk on fire" ||
		failure[0]["is_interrupt"] != false || failure[0]["tool_use_id"] == "" {
		t.Errorf("PostToolUseFailure %v", failure)
	}
	if _, ok := failure[0]["duration_ms"].(float64); !ok {
		t.Errorf("PostToolUseFailure without duration_ms: %v", failure[0])
	}
	var sawContext bool
	for _, m := range p.messages(res.SessionID) {
		sawContext = sawContext || m.Synthetic && strings.Contains(m.Text(), "THE DISK NEEDS A LOOK")
	}
	if !sawContext {
		t.Error("PostToolUseFailure's additionalContext did not reach the model")
	}
}

// PermissionRequest hooks answer an approval before anyone is asked:
// allow (with updatedInput in the tool's input), deny (message as the
// reason); without an answer the approver is asked and the Notification
// hooks are told.
func TestPermissionRequestAndNotification(t *testing.T) {
	const manifest = `
agents:
  main:
    tool_approval: {probe: ask}
    model:
      type: scripted
      turns:
        - tool_calls: [{name: probe, args: {path: /etc}}]
        - "done"
`
	for _, tc := range []struct {
		name, out  string
		ran        string // the probe's input, "" when it did not run
		result     string
		askedHuman bool
	}{
		{"allow", `{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{"behavior":"allow","updatedInput":{"path":"/tmp"}}}}`, `{"path":"/tmp"}`, "probe ran", false},
		{"deny", `{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{"behavior":"deny","message":"not /etc"}}}`, "", "not /etc", false},
		{"no decision", `{}`, `{"path":"/etc"}`, "probe ran", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tl := &probe{}
			p := newProject(t, manifest, settingsJSON(t, map[string][]map[string]any{
				"PermissionRequest": {group("probe", logTo("perm"), cmdHook("echo '"+tc.out+"'"))},
				"Notification":      {group("permission_prompt", logTo("note"))},
			}), nil, tl)
			var mu sync.Mutex
			asked := false
			p.reg.OnApproval.Use(func(ctx context.Context, r hook.ApprovalRequest, next hook.Next[hook.ApprovalRequest, hook.ApprovalDecision]) hook.ApprovalDecision {
				mu.Lock()
				asked = true
				mu.Unlock()
				return hook.ApprovalDecision{Outcome: hook.AllowedOnce}
			})
			res := p.runNode("main", "go")
			ran := tl.ran()
			if got := strings.Join(ran, ""); got != tc.ran {
				t.Errorf("probe ran with %q, want %q", got, tc.ran)
			}
			if rs := p.toolResults(res.SessionID); len(rs) != 1 || !strings.Contains(rs[0].Text, tc.result) {
				t.Errorf("tool result %+v", rs)
			}
			mu.Lock()
			if asked != tc.askedHuman {
				t.Errorf("approver asked = %v", asked)
			}
			mu.Unlock()
			perm := p.logged1("perm")
			if len(perm) != 1 || perm[0]["tool_name"] != "probe" || perm[0]["hook_event_name"] != "PermissionRequest" {
				t.Errorf("PermissionRequest payload %v", perm)
			}
			if tc.askedHuman {
				note := p.logged1("note")
				if len(note) != 1 || note[0]["notification_type"] != "permission_prompt" || note[0]["message"] != "Claude needs your permission to use probe" {
					t.Errorf("Notification %v", note)
				}
			} else if _, err := os.Stat(filepath.Join(p.dir, "note.jsonl")); err == nil {
				t.Error("Notification fired though a hook answered")
			}
		})
	}
}

// A Stop hook's additionalContext keeps the turn going, as in Claude Code
// (without being a block); the loop guard bounds it.
func TestStopAdditionalContextContinues(t *testing.T) {
	p := newProject(t, "agents:\n  main:\n    model: {type: scripted, turns: [\"first\", \"second\"]}\n",
		settingsJSON(t, map[string][]map[string]any{"Stop": {group("", cmdHook(`input=$(cat)
case "$input" in *'"stop_hook_active":true'*) exit 0;; esac
echo '{"hookSpecificOutput":{"hookEventName":"Stop","additionalContext":"Also mention the tests."}}'`))}}), nil)
	res := p.runNode("main", "go")
	if res.Result.Output != "second" {
		t.Errorf("output %q: the context did not keep the turn going", res.Result.Output)
	}
	var saw bool
	for _, m := range p.messages(res.SessionID) {
		saw = saw || m.Synthetic && m.Text() == "Also mention the tests."
	}
	if !saw {
		t.Error("the context is not in the conversation")
	}
}

// SessionStart gets model and source, and CLAUDE_ENV_FILE: a file it may
// write export lines to.
func TestSessionStartModelAndEnvFile(t *testing.T) {
	p := newProject(t, "agents:\n  main:\n    model: {type: scripted, turns: [\"hi\"]}\n",
		settingsJSON(t, map[string][]map[string]any{"SessionStart": {group("startup",
			cmdHook(`cat >> "$CLAUDE_PROJECT_DIR/start.jsonl"; echo 'export FOO=1' >> "$CLAUDE_ENV_FILE"; echo "$CLAUDE_ENV_FILE" > "$CLAUDE_PROJECT_DIR/envfile"`))}}), nil)
	p.runNode("main", "go")
	start := p.payloads("start.jsonl")
	if len(start) != 1 || start[0]["model"] != "test" || start[0]["source"] != "startup" {
		t.Errorf("SessionStart %v", start)
	}
	name, _ := os.ReadFile(filepath.Join(p.dir, "envfile"))
	data, err := os.ReadFile(strings.TrimSpace(string(name)))
	if err != nil || string(data) != "export FOO=1\n" {
		t.Errorf("CLAUDE_ENV_FILE %q: %q %v", name, data, err)
	}
}

// What SessionStart hooks export through CLAUDE_ENV_FILE is seen by every
// later Bash command of the session, its subagents' included (Claude
// Code's rule); a run without such a hook sees nothing of it.
func TestEnvFileReachesBash(t *testing.T) {
	p := newProject(t, `
workspace: .
agents:
  lead:
    tools: [subagent, execution]
    tool_approval: {"*": allow}
    model:
      type: scripted
      turns:
        - tool_calls: [{name: Bash, args: {command: 'echo "lead FOO=$FOO"'}}]
        - tool_calls: [{name: task, args: {agent_or_team: ops, prompt: "Check the environment."}}]
        - "lead done"
  ops:
    tools: [execution]
    tool_approval: {"*": allow}
    model:
      type: scripted
      turns:
        - tool_calls: [{name: Bash, args: {command: 'echo "ops FOO=$FOO"'}}]
        - "ops done"
`, settingsJSON(t, map[string][]map[string]any{"SessionStart": {group("startup",
		cmdHook(`echo 'export FOO="with space"' >> "$CLAUDE_ENV_FILE"`))}}), nil)
	res := p.runNode("lead", "go")
	if res.Result.StopReason != event.StopCompleted {
		t.Fatalf("run ended %s: %v", res.Result.StopReason, res.Result.Err)
	}
	lead := p.toolResults(res.SessionID)
	if len(lead) < 1 || !strings.HasPrefix(lead[0].Text, "lead FOO=with space\n") {
		t.Errorf("lead's Bash: %+v", lead)
	}
	ops := p.toolResults(p.childNamed(res.SessionID, "ops"))
	if len(ops) != 1 || !strings.HasPrefix(ops[0].Text, "ops FOO=with space\n") {
		t.Errorf("the subagent's Bash: %+v", ops)
	}
}
