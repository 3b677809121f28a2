package command_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/hook"
	"github.com/agentpool/agentpool/hook/command"
	"github.com/agentpool/agentpool/internal/proctree/proctreetest"
	"github.com/agentpool/agentpool/model"
	"github.com/agentpool/agentpool/pool"
)

// A PreToolUse hook that exits 2 blocks the tool; the model sees stderr as
// the reason; the run is recorded.
func TestPreToolUseExit2Blocks(t *testing.T) {
	tl := &probe{}
	p := newProject(t, probeManifest,
		settingsFor("PreToolUse", "pro.*", "${CLAUDE_PROJECT_DIR}/hooks/deny.sh", 0),
		map[string]string{"deny.sh": `cat >> "$CLAUDE_PROJECT_DIR/pre.jsonl"; echo "paths under /tmp are off limits" >&2; exit 2`}, tl)
	res := p.run("go")
	if res.Result.StopReason != event.StopCompleted {
		t.Fatalf("run ended %s: %v", res.Result.StopReason, res.Result.Err)
	}
	if len(tl.ran()) != 0 {
		t.Error("the blocked tool ran")
	}
	rs := p.toolResults(res.SessionID)
	if len(rs) != 1 || !rs[0].IsError || !strings.Contains(rs[0].Text, "paths under /tmp are off limits") {
		t.Errorf("tool result the model sees: %+v", rs)
	}
	pl := p.payloads("pre.jsonl")
	if len(pl) != 1 {
		t.Fatalf("%d payloads", len(pl))
	}
	in := pl[0]
	if in["hook_event_name"] != "PreToolUse" || in["tool_name"] != "probe" || in["session_id"] != res.SessionID ||
		in["cwd"] != p.dir || in["permission_mode"] != "default" || in["tool_use_id"] == "" {
		t.Errorf("stdin payload %v", in)
	}
	if ti, _ := in["tool_input"].(map[string]any); ti["path"] != "/tmp/x" {
		t.Errorf("tool_input %v", in["tool_input"])
	}
	runs := p.hookRuns(res.SessionID)
	if len(runs) != 1 || runs[0]["decision"] != "deny" || runs[0]["exit_code"] != float64(2) || runs[0]["hook_event"] != "PreToolUse" ||
		runs[0]["command"] != "${CLAUDE_PROJECT_DIR}/hooks/deny.sh" || runs[0]["tool_name"] != "probe" {
		t.Errorf("hook_run records %v", runs)
	}
	if _, ok := runs[0]["duration_ms"].(float64); !ok {
		t.Errorf("duration_ms %T", runs[0]["duration_ms"])
	}
}

// A JSON permissionDecision deny blocks the same way; a hookSpecificOutput
// for another event is ignored.
func TestPreToolUseJSONDecisions(t *testing.T) {
	for _, tc := range []struct {
		name, out string
		ran       bool
		result    string
	}{
		{"deny", `{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"json says no"}}`, false, "json says no"},
		{"legacy block", `{"decision":"block","reason":"legacy no"}`, false, "legacy no"},
		{"other event", `{"hookSpecificOutput":{"hookEventName":"PostToolUse","permissionDecision":"deny"}}`, true, "probe ran"},
		{"allow with updated input", `{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow","updatedInput":{"path":"/safe"}}}`, true, `probe ran with {"path":"/safe"}`},
		{"ask without approver", `{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"ask","permissionDecisionReason":"check"}}`, false, "approval unavailable"},
		{"continue false", `{"continue":false,"stopReason":"halt everything"}`, false, "halt everything"},
		{"plain text", `not json at all`, true, "probe ran"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tl := &probe{}
			p := newProject(t, probeManifest, settingsFor("PreToolUse", "probe", "echo '"+tc.out+"'", 0), nil, tl)
			res := p.run("go")
			if got := len(tl.ran()) > 0; got != tc.ran {
				t.Errorf("ran = %v, want %v", got, tc.ran)
			}
			rs := p.toolResults(res.SessionID)
			if len(rs) != 1 || !strings.Contains(rs[0].Text, tc.result) {
				t.Errorf("tool result %+v, want it to contain %q", rs, tc.result)
			}
		})
	}
}

// Several matching hooks: the strictest decision wins (deny > ask > allow),
// and the tool_approval policy takes part.
func TestStrictestDecisionWins(t *testing.T) {
	allow := `{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow"}}`
	ask := `{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"ask","permissionDecisionReason":"asked"}}`
	deny := `{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"denied by B"}}`
	settings := func(outs ...string) string {
		var groups []any
		for _, o := range outs {
			groups = append(groups, map[string]any{"matcher": "*", "hooks": []any{map[string]any{"type": "command", "command": "echo '" + o + "'"}}})
		}
		b, _ := json.Marshal(map[string]any{"hooks": map[string]any{"PreToolUse": groups}})
		return string(b)
	}
	for _, tc := range []struct {
		name     string
		manifest string
		outs     []string
		ran      bool
		result   string
	}{
		{"allow+deny", probeManifest, []string{allow, deny}, false, "denied by B"},
		{"allow+ask", probeManifest, []string{allow, ask}, false, "approval unavailable"},
		{"allow+allow", probeManifest, []string{allow, allow}, true, "probe ran"},
		{"allow vs policy deny", probeManifest + "    tool_approval: {probe: deny}\n", []string{allow}, false, "tool_approval policy"},
		{"allow vs policy ask", probeManifest + "    tool_approval: {\"*\": ask}\n", []string{allow}, false, "approval unavailable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tl := &probe{}
			p := newProject(t, tc.manifest, settings(tc.outs...), nil, tl)
			res := p.run("go")
			if got := len(tl.ran()) > 0; got != tc.ran {
				t.Errorf("ran = %v, want %v", got, tc.ran)
			}
			if rs := p.toolResults(res.SessionID); len(rs) != 1 || !strings.Contains(rs[0].Text, tc.result) {
				t.Errorf("tool result %+v, want %q", rs, tc.result)
			}
		})
	}
}

const subagentManifest = `
agents:
  main:
    model:
      type: scripted
      turns:
        - tool_calls: [{name: task, args: {agent_or_team: child, prompt: "do it"}}]
        - text: "main done"
    tools: [subagent]
  child:
    model:
      type: scripted
      turns: ["first answer", "second answer"]
`

// A SubagentStop hook gets agent_id, agent_type and last_assistant_message;
// when it blocks, the child runs one more turn with the reason; it is not
// run for the root, whose Stop hook is.
func TestSubagentStopBlockContinuesChild(t *testing.T) {
	settings := `{"hooks": {
	  "SubagentStop": [{"matcher": "child", "hooks": [{"type": "command", "command": "sh ${CLAUDE_PROJECT_DIR}/hooks/substop.sh"}]}],
	  "SubagentStart": [{"matcher": "chi.*", "hooks": [{"type": "command", "command": "sh ${CLAUDE_PROJECT_DIR}/hooks/substart.sh"}]}],
	  "Stop": [{"hooks": [{"type": "command", "command": "cat >> \"$CLAUDE_PROJECT_DIR/stop.jsonl\""}]}]
	}}`
	p := newProject(t, subagentManifest, settings, map[string]string{
		"substop.sh": `input=$(cat); printf '%s\n' "$input" >> "$CLAUDE_PROJECT_DIR/substop.jsonl"
case "$input" in *'"stop_hook_active":true'*) exit 0;; esac
printf '{"decision":"block","reason":"Please double-check."}'`,
		"substart.sh": `cat >> "$CLAUDE_PROJECT_DIR/substart.jsonl"
printf '{"hookSpecificOutput":{"hookEventName":"SubagentStart","additionalContext":"CONTEXT FROM SUBAGENT START"}}'`,
	})
	var mu sync.Mutex
	var firstChildRequest string
	p.reg.OnRequest.Use(func(ctx context.Context, r hook.ModelRequest, next hook.Next[hook.ModelRequest, *model.Request]) *model.Request {
		mu.Lock()
		if r.Agent == "child" && firstChildRequest == "" {
			for _, m := range r.Request.Messages {
				firstChildRequest += m.Text() + "\n"
			}
		}
		mu.Unlock()
		return next(ctx, r)
	})
	res := p.run("go")
	if res.Result.StopReason != event.StopCompleted {
		t.Fatalf("run ended %s: %v", res.Result.StopReason, res.Result.Err)
	}
	kids := p.children(res.SessionID)
	if len(kids) != 1 {
		t.Fatalf("%d children", len(kids))
	}
	childID := kids[0].ID

	stops := p.payloads("substop.jsonl")
	if len(stops) != 2 {
		t.Fatalf("SubagentStop ran %d times, want 2", len(stops))
	}
	first, second := stops[0], stops[1]
	if first["agent_id"] != childID || first["agent_type"] != "child" || first["last_assistant_message"] != "first answer" ||
		first["stop_hook_active"] != false || first["hook_event_name"] != "SubagentStop" || first["session_id"] != res.SessionID {
		t.Errorf("first SubagentStop payload %v", first)
	}
	if _, ok := first["agent_transcript_path"]; !ok {
		t.Errorf("no agent_transcript_path in %v", first)
	}
	if second["stop_hook_active"] != true || second["last_assistant_message"] != "second answer" {
		t.Errorf("second SubagentStop payload %v", second)
	}
	// The child continued with the reason as a new message.
	var sawReason bool
	for _, m := range p.messages(childID) {
		if m.Role == model.RoleUser && m.Synthetic && m.Text() == "Please double-check." {
			sawReason = true
		}
	}
	if !sawReason {
		t.Error("the reason did not become the child's next message")
	}
	if rs := p.toolResults(res.SessionID); len(rs) != 1 || !strings.Contains(rs[0].Text, "second answer") {
		t.Errorf("the parent got %+v, want the child's second answer", rs)
	}
	// Stop ran for the root only.
	rootStops := p.payloads("stop.jsonl")
	if len(rootStops) != 1 || rootStops[0]["last_assistant_message"] != "main done" || rootStops[0]["agent_id"] != nil {
		t.Errorf("Stop payloads %v", rootStops)
	}
	// SubagentStart: payload, and its context reached the first request.
	starts := p.payloads("substart.jsonl")
	if len(starts) != 1 || starts[0]["agent_id"] != childID || starts[0]["agent_type"] != "child" {
		t.Errorf("SubagentStart payloads %v", starts)
	}
	mu.Lock()
	if !strings.Contains(firstChildRequest, "CONTEXT FROM SUBAGENT START") {
		t.Errorf("child's first request lacks the SubagentStart context:\n%s", firstChildRequest)
	}
	mu.Unlock()
	// Hook runs are recorded in the log of the session they ran for.
	var childRuns []string
	for _, r := range p.hookRuns(childID) {
		childRuns = append(childRuns, r["hook_event"].(string)+":"+r["decision"].(string))
	}
	if strings.Join(childRuns, ",") != "SubagentStop:block,SubagentStop:none" {
		t.Errorf("child's hook runs %v", childRuns)
	}
	var rootRuns []string
	for _, r := range p.hookRuns(res.SessionID) {
		rootRuns = append(rootRuns, r["hook_event"].(string))
	}
	if strings.Join(rootRuns, ",") != "SubagentStart,Stop" {
		t.Errorf("root's hook runs %v", rootRuns)
	}
}

// Loop guard: stop_hook_active is true on a repeat, and after 8
// consecutive blocks the agent stops anyway.
func TestStopLoopGuard(t *testing.T) {
	p := newProject(t, "agents:\n  main:\n    model: {type: scripted, turns: [\"again\"]}\n",
		// Stop ignores matchers.
		settingsFor("Stop", "no-such-agent", `cat >> "$CLAUDE_PROJECT_DIR/stop.jsonl"; echo "keep going" >&2; exit 2`, 0), nil)
	res := p.run("go")
	if res.Result.StopReason != event.StopCompleted {
		t.Fatalf("run ended %s: %v", res.Result.StopReason, res.Result.Err)
	}
	calls := p.payloads("stop.jsonl")
	if len(calls) != command.DefaultMaxStopBlocks+1 {
		t.Fatalf("Stop ran %d times, want %d", len(calls), command.DefaultMaxStopBlocks+1)
	}
	for i, c := range calls {
		if want := i > 0; c["stop_hook_active"] != want {
			t.Errorf("call %d: stop_hook_active %v", i, c["stop_hook_active"])
		}
	}
	recs, _ := p.pool.Store().Events(context.Background(), res.SessionID, 0)
	guard := 0
	for _, r := range recs {
		if c, ok := r.Event.(event.Custom); ok && c.EventType == command.EventHookLoopGuard {
			guard++
		}
	}
	if guard != 1 {
		t.Errorf("%d loop guard records", guard)
	}
}

// A hook that sleeps past its timeout is killed with its whole process
// group (a background grandchild included) and the run goes on.
func TestTimeoutKillsProcessGroup(t *testing.T) {
	tl := &probe{}
	p := newProject(t, probeManifest, settingsFor("PreToolUse", "", "sh ${CLAUDE_PROJECT_DIR}/hooks/slow.sh", 1),
		map[string]string{"slow.sh": `sleep 30 &
echo $! > "$CLAUDE_PROJECT_DIR/grandchild.pid"
sleep 30`}, tl)
	start := time.Now()
	res := p.run("go")
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("run took %s", d)
	}
	if res.Result.StopReason != event.StopCompleted || len(tl.ran()) != 1 {
		t.Errorf("run ended %s, tool ran %d times; want completed, 1 (a timeout is a non-blocking error)", res.Result.StopReason, len(tl.ran()))
	}
	raw, err := os.ReadFile(filepath.Join(p.dir, "grandchild.pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	if err != nil {
		t.Fatal(err)
	}
	if !proctreetest.WaitExit(pid, 3*time.Second) { // its pidfd tells
		t.Fatalf("the background grandchild %d survived the timeout", pid)
	}
	runs := p.hookRuns(res.SessionID)
	if len(runs) != 1 || runs[0]["decision"] != "timeout" || runs[0]["timed_out"] != true {
		t.Errorf("hook_run %v", runs)
	}
	if !strings.Contains(p.logs.String(), "timed out") {
		t.Errorf("timeout not logged:\n%s", p.logs.String())
	}
}

// UserPromptSubmit, SessionStart, PostToolUse, SessionEnd; exit codes;
// CLAUDE_PROJECT_DIR in the environment and as the working directory.
func TestOtherEvents(t *testing.T) {
	settings := `{"hooks": {
	  "SessionStart": [{"matcher": "startup", "hooks": [{"type": "command", "command": "echo 'SESSION CONTEXT'; pwd > \"$CLAUDE_PROJECT_DIR/pwd.txt\""}]}],
	  "UserPromptSubmit": [{"hooks": [
	      {"type": "command", "command": "sh ${CLAUDE_PROJECT_DIR}/hooks/prompt.sh"},
	      {"type": "command", "command": "exit 3"}
	  ]}],
	  "PostToolUse": [{"matcher": "probe", "hooks": [{"type": "command", "command": "sh ${CLAUDE_PROJECT_DIR}/hooks/post.sh"}]}],
	  "SessionEnd": [{"hooks": [{"type": "command", "command": "cat >> \"$CLAUDE_PROJECT_DIR/end.jsonl\""}]}],
	  "TeammateIdle": [{"hooks": [{"type": "command", "command": "true"}]}]
	}}`
	tl := &probe{}
	p := newProject(t, probeManifest, settings, map[string]string{
		"prompt.sh": `input=$(cat)
case "$input" in *forbidden*) echo "that prompt is forbidden" >&2; exit 2;; esac
printf '{"hookSpecificOutput":{"hookEventName":"UserPromptSubmit","additionalContext":"PROMPT CONTEXT"}}'`,
		"post.sh": `cat >> "$CLAUDE_PROJECT_DIR/post.jsonl"; printf '{"decision":"block","reason":"the probe output looks odd"}'`,
	}, tl)
	var mu sync.Mutex
	var firstRequest string
	p.reg.OnRequest.Use(func(ctx context.Context, r hook.ModelRequest, next hook.Next[hook.ModelRequest, *model.Request]) *model.Request {
		mu.Lock()
		if firstRequest == "" {
			for _, m := range r.Request.Messages {
				firstRequest += m.Text() + "\n"
			}
		}
		mu.Unlock()
		return next(ctx, r)
	})
	res := p.run("hello")
	if res.Result.StopReason != event.StopCompleted {
		t.Fatalf("run ended %s: %v", res.Result.StopReason, res.Result.Err)
	}
	mu.Lock()
	for _, want := range []string{"hello", "SESSION CONTEXT", "PROMPT CONTEXT"} {
		if !strings.Contains(firstRequest, want) {
			t.Errorf("first request lacks %q:\n%s", want, firstRequest)
		}
	}
	mu.Unlock()
	if rs := p.toolResults(res.SessionID); len(rs) != 1 || !strings.Contains(rs[0].Text, "probe ran") || !strings.Contains(rs[0].Text, "the probe output looks odd") {
		t.Errorf("tool result %+v", rs)
	}
	post := p.payloads("post.jsonl")
	if len(post) != 1 || !strings.Contains(post[0]["tool_response"].(string), "probe ran with") {
		t.Errorf("PostToolUse payload %v", post)
	}
	// SessionEnd's reason is in Claude Code's vocabulary; agentpool's stop
	// reason is beside it.
	if end := p.payloads("end.jsonl"); len(end) != 1 || end[0]["reason"] != "other" || end[0]["stop_reason"] != "completed" || end[0]["hook_event_name"] != "SessionEnd" {
		t.Errorf("SessionEnd payload %v", end)
	}
	if pwd, _ := os.ReadFile(filepath.Join(p.dir, "pwd.txt")); strings.TrimSpace(string(pwd)) != p.dir {
		t.Errorf("hook ran in %q, want %q", pwd, p.dir)
	}
	decisions := map[string]int{}
	for _, r := range p.hookRuns(res.SessionID) {
		decisions[r["hook_event"].(string)+":"+r["decision"].(string)]++
	}
	for _, want := range []string{"SessionStart:none", "UserPromptSubmit:none", "UserPromptSubmit:error", "PostToolUse:block", "SessionEnd:none"} {
		if decisions[want] != 1 {
			t.Errorf("hook runs %v lack %s", decisions, want)
		}
	}
	for _, want := range []string{"exit code 3", "TeammateIdle: event not supported"} {
		if !strings.Contains(p.logs.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, p.logs.String())
		}
	}
	// exit 2 blocks the prompt.
	res = p.run("something forbidden")
	if res.Result.StopReason != event.StopError || !strings.Contains(res.Result.Err.Error(), "that prompt is forbidden") {
		t.Errorf("blocked prompt: %s %v", res.Result.StopReason, res.Result.Err)
	}
	if len(tl.ran()) != 1 {
		t.Errorf("tool ran %d times", len(tl.ran()))
	}
}

// The example under examples/claude-hooks loads and behaves as described.
func TestExampleClaudeHooks(t *testing.T) {
	m, err := config.Load("../../examples/claude-hooks/agentpool.yaml")
	if err != nil {
		t.Fatal(err)
	}
	reg, err := command.Load(m)
	if err != nil {
		t.Fatal(err)
	}
	p, err := pool.New(m, pool.Options{Hooks: reg})
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close(context.Background())
	defer p.Close()
	res, err := p.RunSink(context.Background(), pool.RunRequest{Prompt: "Plan the release"}, event.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if res.Result.StopReason != event.StopCompleted || res.Result.Output != "Release plan ready." {
		t.Fatalf("run ended %s %q: %v", res.Result.StopReason, res.Result.Output, res.Result.Err)
	}
	ms, _ := p.Store().Messages(context.Background(), res.SessionID)
	var results []string
	var sawConventions bool
	for _, msg := range ms {
		for _, part := range msg.Parts {
			if part.Kind == model.PartToolResult {
				results = append(results, part.Text)
			}
		}
		if msg.Synthetic && strings.Contains(msg.Text(), "Project conventions") {
			sawConventions = true
		}
	}
	if !sawConventions {
		t.Error("SessionStart context missing")
	}
	if len(results) != 2 || !strings.Contains(results[0], "Risks: the publish step needs credentials.") || !strings.Contains(results[1], "need a human") {
		t.Errorf("tool results %q", results)
	}
	if got := reg.Approvals.Decide("lead", "task_output"); got != "ask" {
		t.Errorf("tool_approval not applied: %q", got)
	}
}
