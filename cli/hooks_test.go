package cli

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// hooksProject writes a manifest whose every command hook keeps its
// payload in ev/ (one file per run) and returns its directory.
func hooksProject(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	logHook := `{"type": "command", "command": "mkdir -p \"$CLAUDE_PROJECT_DIR/ev\"; cat > \"$(mktemp \"$CLAUDE_PROJECT_DIR/ev/XXXXXXXX\")\""}`
	var events []string
	for _, ev := range []string{"SessionStart", "SessionEnd", "UserPromptSubmit", "PreToolUse", "PostToolUse", "SubagentStart", "SubagentStop", "Stop"} {
		events = append(events, `"`+ev+`": [{"hooks": [`+logHook+`]}]`)
	}
	os.MkdirAll(filepath.Join(dir, ".claude"), 0o755)
	os.WriteFile(filepath.Join(dir, ".claude", "settings.json"), []byte(`{"hooks": {`+strings.Join(events, ",")+`}}`), 0o644)
	os.WriteFile(filepath.Join(dir, "agentpool.yaml"), []byte(`hooks: {settings: .claude/settings.json}
default_agent: lead
agents:
  lead:
    tools: [subagent]
    model:
      type: scripted
      turns:
        - tool_calls: [{name: task, args: {agent_or_team: helper, prompt: "Help."}}]
        - "lead done"
  helper: {model: {type: scripted, turns: ["helped"]}}
`), 0o644)
	return dir
}

// hookEvents reads what the logging hooks kept: event -> payloads.
func hookEvents(t *testing.T, dir string) map[string][]map[string]any {
	t.Helper()
	out := map[string][]map[string]any{}
	files, _ := filepath.Glob(filepath.Join(dir, "ev", "*"))
	for _, f := range files {
		b, _ := os.ReadFile(f)
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		ev := m["hook_event_name"].(string)
		out[ev] = append(out[ev], m)
	}
	return out
}

func counts(evs map[string][]map[string]any) string {
	var out []string
	for ev, ps := range evs {
		out = append(out, ev+"="+string(rune('0'+len(ps))))
	}
	sort.Strings(out)
	return strings.Join(out, " ")
}

// acpClient drives `agentpool serve acp` over its stdin and stdout.
type acpClient struct {
	t   *testing.T
	in  *json.Encoder
	out *bufio.Scanner
	id  int
}

// call sends a request and returns its result, skipping notifications.
func (c *acpClient) call(method string, params any) map[string]any {
	c.t.Helper()
	c.id++
	if err := c.in.Encode(map[string]any{"jsonrpc": "2.0", "id": c.id, "method": method, "params": params}); err != nil {
		c.t.Fatal(err)
	}
	for c.out.Scan() {
		var m struct {
			ID     *int            `json:"id"`
			Result map[string]any  `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		if err := json.Unmarshal(c.out.Bytes(), &m); err != nil {
			c.t.Fatalf("%q: %v", c.out.Text(), err)
		}
		if m.ID == nil || *m.ID != c.id {
			continue
		}
		if m.Error != nil {
			c.t.Fatalf("%s: %s", method, m.Error)
		}
		return m.Result
	}
	c.t.Fatalf("%s: no answer (%v)", method, c.out.Err())
	return nil
}

// `serve acp` runs each command hook once (the manifest's hooks are
// installed once), SessionStart and SessionEnd once per ACP session (not
// around every prompt), and SessionEnd says why it ended: session/close
// (other) or the editor going away (prompt_input_exit).
func TestServeACPRunsHooksOncePerSession(t *testing.T) {
	t.Parallel() // mostly waits on its CLI processes
	dir := hooksProject(t)
	cmd := exec.Command(cliBinary(t), "serve", "acp", "--db", filepath.Join(dir, "data", "s.db"))
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "XDG_DATA_HOME="+t.TempDir(), "HOME="+t.TempDir())
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var waitErr error
	go func() {
		waitErr = cmd.Wait()
		close(done)
	}()
	t.Cleanup(func() {
		stdin.Close()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	sc := bufio.NewScanner(stdout)
	sc.Buffer(nil, 16<<20)
	c := &acpClient{t: t, in: json.NewEncoder(stdin), out: sc}
	c.call("initialize", map[string]any{"protocolVersion": 1})
	prompt := func(sid, text string) {
		r := c.call("session/prompt", map[string]any{"sessionId": sid, "prompt": []any{map[string]any{"type": "text", "text": text}}})
		if r["stopReason"] != "end_turn" {
			t.Fatalf("prompt %q: %v", text, r)
		}
	}
	first := c.call("session/new", map[string]any{"cwd": dir, "mcpServers": []any{}})["sessionId"].(string)
	prompt(first, "one")
	prompt(first, "two")
	if got := counts(hookEvents(t, dir)); got != "PostToolUse=2 PreToolUse=2 SessionStart=1 Stop=2 SubagentStart=2 SubagentStop=2 UserPromptSubmit=2" {
		t.Fatalf("two prompts of one session ran: %s", got)
	}
	c.call("session/close", map[string]any{"sessionId": first})
	second := c.call("session/new", map[string]any{"cwd": dir, "mcpServers": []any{}})["sessionId"].(string)
	prompt(second, "three")
	stdin.Close() // the editor goes away
	select {
	case <-done:
		if waitErr != nil {
			t.Fatalf("serve acp: %v", waitErr)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve acp did not exit at the end of its input")
	}
	evs := hookEvents(t, dir)
	if got := counts(evs); got != "PostToolUse=3 PreToolUse=3 SessionEnd=2 SessionStart=2 Stop=3 SubagentStart=3 SubagentStop=3 UserPromptSubmit=3" {
		t.Errorf("hook runs: %s", got)
	}
	ends := map[string]string{}
	for _, e := range evs["SessionEnd"] {
		ends[e["session_id"].(string)] = e["reason"].(string)
	}
	if ends[first] != "other" || ends[second] != "prompt_input_exit" {
		t.Errorf("SessionEnd reasons %v (first %s, second %s)", ends, first, second)
	}
	for _, s := range evs["SessionStart"] {
		if s["source"] != "startup" {
			t.Errorf("SessionStart %v", s)
		}
	}
	// Transcripts live next to the database.
	for _, s := range evs["Stop"] {
		p := s["transcript_path"].(string)
		if !strings.HasPrefix(p, filepath.Join(dir, "data", "transcripts")+string(filepath.Separator)) {
			t.Errorf("transcript_path %s", p)
		} else if _, err := os.Stat(p); err != nil {
			t.Error(err)
		}
	}
}

// `agentpool run` writes the transcripts of a session next to its
// database (the hooks read them through transcript_path); `sessions
// delete` deletes them with the session.
func TestRunTranscriptsDeletedWithSession(t *testing.T) {
	t.Parallel() // mostly waits on its CLI processes
	dir := hooksProject(t)
	db := filepath.Join(dir, "data", "s.db")
	r := runCLI(t, dir, "run", "--db", db, "go")
	if r.code != 0 {
		t.Fatalf("run: exit %d: %s", r.code, r.stderr)
	}
	stop := hookEvents(t, dir)["Stop"]
	if len(stop) != 1 {
		t.Fatalf("Stop ran %d times", len(stop))
	}
	root := stop[0]["session_id"].(string)
	transcripts := filepath.Join(dir, "data", "transcripts")
	if p := stop[0]["transcript_path"]; p != filepath.Join(transcripts, root+".jsonl") {
		t.Errorf("transcript_path %v", p)
	}
	subs, _ := filepath.Glob(filepath.Join(transcripts, root, "subagents", "agent-*.jsonl"))
	if len(subs) != 1 {
		t.Errorf("subagent transcripts %v", subs)
	}
	if r := runCLI(t, dir, "sessions", "--db", db, "delete", root); r.code != 0 {
		t.Fatalf("sessions delete: exit %d: %s", r.code, r.stderr)
	}
	left, _ := os.ReadDir(transcripts)
	if len(left) != 0 {
		t.Errorf("transcripts left after delete: %v", left)
	}
}
