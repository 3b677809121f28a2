package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/agentpool/agentpool/internal/opencodetest"
)

// opencodeTeamProject writes a project whose manifest runs the parallel
// team pair of a native agent (scripted) and the real `opencode acp` on
// model, with Claude Code command hooks that keep every SubagentStart and
// SubagentStop payload in ev/, and for SubagentStop a copy of the
// subagent's transcript in tr/. It returns the project's directory.
func opencodeTeamProject(t *testing.T, oc opencodetest.Setup, nativeAnswer string) string {
	t.Helper()
	dir := t.TempDir()
	logHook := `mkdir -p "$CLAUDE_PROJECT_DIR/ev"
f=$(mktemp "$CLAUDE_PROJECT_DIR/ev/XXXXXXXX")
cat > "$f"
tr=$(grep -o '"agent_transcript_path":"[^"]*"' "$f" | sed 's/.*:"//; s/"$//')
if grep -q '"hook_event_name":"SubagentStop"' "$f" && [ -n "$tr" ]; then mkdir -p "$CLAUDE_PROJECT_DIR/tr"; cp "$tr" "$CLAUDE_PROJECT_DIR/tr/"; fi
`
	hook := `[{"hooks": [{"type": "command", "command": "sh \"$CLAUDE_PROJECT_DIR/log.sh\""}]}]`
	files := map[string]string{
		"log.sh":                logHook,
		".claude/settings.json": `{"hooks": {"SubagentStart": ` + hook + `, "SubagentStop": ` + hook + `}}`,
		"agentpool.yaml": `hooks: {settings: .claude/settings.json}
default_agent: pair
agents:
  native:
    description: A native agent on a scripted model.
    model: {type: scripted, turns: [` + strconv.Quote(nativeAnswer) + `]}
` + oc.MemberYAML("opencode", "The real opencode, on a fake model.") + `
teams:
  pair: {mode: parallel, members: [native, opencode]}
`,
	}
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// Issue 34's "done when" on the terminal and in the hooks: `agentpool run`
// of a parallel team [native agent, the real opencode acp] in a pseudo
// terminal draws both members in its live tree (opencode starting for
// seconds: its initialize) and ends on both completed, opencode with its
// one tool use; stdout is the team's answer with opencode's; the
// SubagentStart and SubagentStop command hooks get both children, and
// SubagentStop opencode's final text as last_assistant_message, with a
// transcript that holds its prompt and answer. No opencode process
// outlives the run.
func TestRunTeamWithOpencodeTerminalAndHooks(t *testing.T) {
	t.Parallel() // mostly waits on opencode's initialize (cli is make test's longest package)
	const answer = "opencode says hello from the fake model."
	const native = "The native member checked the plan."
	model := opencodetest.NewModel(t, answer)
	model.ToolCalls = []opencodetest.ToolCall{{Name: "read", Args: `{"filePath":"notes.md"}`}}
	oc := opencodetest.NewSetup(t, model, "")
	if err := os.WriteFile(filepath.Join(oc.Project, "notes.md"), []byte("Greet the team.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := opencodeTeamProject(t, oc, native)

	r := startPTY(t, nil, "run", "-c", filepath.Join(dir, "agentpool.yaml"), "--db", ":memory:", "Say hello.")
	code, screen := r.wait(t)
	plain := stripCSI(screen)
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, plain)
	}
	if left := oc.Leftovers(); len(left) > 0 {
		t.Errorf("opencode processes outlived the run: %v", left)
	}
	// (The renderer redraws only what changed in a line: a line's later
	// frames come without its tree branch.)
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`[├└]─ \S+ opencode \[member\] · `),
		regexp.MustCompile(`[├└]─ \S+ native \[member\] · `),
		regexp.MustCompile(`opencode \[member\] · [\d.]+m?s · starting`),
		regexp.MustCompile(`✓ opencode \[member\] · completed · 1 tool use · 17 tok`),
		regexp.MustCompile(`✓ native \[member\] · completed · \d+ tok`),
		regexp.MustCompile(`✓ pair · completed · `),
	} {
		if !want.MatchString(plain) {
			t.Errorf("the terminal never showed %s:\n%s", want, plain)
		}
	}
	if want := "[native]\n" + native + "\n\n[opencode]\n" + answer + "\n"; r.stdout.String() != want {
		t.Errorf("stdout = %q, want %q", r.stdout.String(), want)
	}

	evs := hookEvents(t, dir)
	started := map[string]string{} // agent_type -> agent_id
	for _, p := range evs["SubagentStart"] {
		started[p["agent_type"].(string)], _ = p["agent_id"].(string)
	}
	if len(evs["SubagentStart"]) != 2 || started["native"] == "" || started["opencode"] == "" {
		t.Fatalf("SubagentStart payloads %v", evs["SubagentStart"])
	}
	stops := map[string]map[string]any{}
	for _, p := range evs["SubagentStop"] {
		stops[p["agent_type"].(string)] = p
	}
	if len(evs["SubagentStop"]) != 2 {
		t.Fatalf("SubagentStop payloads %v", evs["SubagentStop"])
	}
	for name, last := range map[string]string{"opencode": answer, "native": native} {
		p := stops[name]
		if p["last_assistant_message"] != last || p["agent_id"] != started[name] {
			t.Errorf("SubagentStop of %s: %v", name, p)
		}
	}
	// The transcript the hook copied: opencode's prompt and answer.
	copies, _ := filepath.Glob(filepath.Join(dir, "tr", "*"))
	var found bool
	for _, f := range copies {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), `"agentId":"`+started["opencode"]+`"`) {
			found = strings.Contains(string(b), `"content":"Say hello."`) && strings.Contains(string(b), answer)
		}
	}
	if !found {
		t.Errorf("no transcript of opencode's session with its prompt and answer among %v", copies)
	}
}
