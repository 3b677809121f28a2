package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/model"
	"github.com/agentpool/agentpool/session"
)

// injectionManifest is a pool whose models, tools and stored titles carry
// control sequences: lead calls Bash, whose output holds an OSC 52
// clipboard write, a CSI and the C1 form of CSI, with a description that
// has them too (the tool's title); it hands a task to helper with a
// description that has them (the child's stored title), and answers with
// them, a bare CR and backspaces. helper fails with an error that has
// them. asker wants to run a command that has them, which is asked about.
const injectionManifest = `default_agent: lead
agents:
  lead:
    tools: [execution, subagent]
    model:
      type: scripted
      turns:
        - tool_calls:
            - name: Bash
              args: {command: "printf 'tool \\033]52;c;VE9PTA==\\007\\033[2;99;99t\\302\\233\\062J'", description: "desc \e]52;c;REVTQw==\a\e[38;5;196m"}
            - name: task
              args: {agent_or_team: helper, description: "child \e]52;c;Q0hJTEQ=\a\e[2;99;99t\u009b2J\u009d0;t\a", prompt: go}
        - text: "answer \e]52;c;QU5TV0VS\a\e[38;5;196m\u009b2J\rfake\b\bline\nsecond\tcol"
  helper:
    model: {type: scripted, turns: [{text: partial, error: "boom \e]52;c;RVJS\a\e[2;99;99t\u009d0;t\a"}]}
  asker:
    tools: [execution]
    model:
      type: scripted
      turns:
        - tool_calls: [{name: Bash, args: {command: "echo \e]52;c;QVNL\a\e[2;99;99t\rsafe"}}]
        - text: not run
`

// What the manifest and the prompt inject, exactly as they come.
const (
	injectedAnswer = "answer \x1b]52;c;QU5TV0VS\a\x1b[38;5;196m\u009b2J\rfake\b\bline\nsecond\tcol"
	injectedPrompt = "title \x1b]52;c;VElUTEU=\a\x1b[2;99;99t\u009b2J"
	injectedChild  = "child \x1b]52;c;Q0hJTEQ=\a\x1b[2;99;99t\u009b2J\u009d0;t\a (@helper subagent)"
)

// injected are the sequences of the manifest and the prompt: none may
// reach a terminal. (Our own output holds no BEL, backspace, C1 control,
// OSC or these CSIs.)
var injected = []string{"\x1b]", "\x1b[2;99;99t", "\x1b[38;5;196m", "\xc2\x9b", "\xc2\x9d", "\a", "\b", "\rfake", "\rsafe"}

// checkNotInjected fails when out holds an injected sequence.
func checkNotInjected(t *testing.T, what, out string) {
	t.Helper()
	for _, s := range injected {
		if i := strings.Index(out, s); i >= 0 {
			t.Errorf("%s holds the injected %q: …%q…", what, s, out[max(0, i-40):min(len(out), i+40)])
		}
	}
}

// checkNoControls fails unless out (a terminal's CR LF read as LF) holds
// no control character but the line feed and tab, and is UTF-8: output
// of ours with no escape sequence of its own.
func checkNoControls(t *testing.T, what, out string) {
	t.Helper()
	out = strings.ReplaceAll(out, "\r\n", "\n")
	if !utf8.ValidString(out) {
		t.Errorf("%s is not UTF-8: %q", what, out)
	}
	for i, r := range out {
		if r < 0x20 && r != '\n' && r != '\t' || r == 0x7f || r >= 0x80 && r <= 0x9f {
			t.Errorf("%s holds control %U: …%q…", what, r, out[max(0, i-40):min(len(out), i+40)])
			return
		}
	}
}

// checkShows fails unless out shows each of want (the visible forms).
func checkShows(t *testing.T, what, out string, want ...string) {
	t.Helper()
	out = strings.ReplaceAll(out, "\r\n", "\n") // a terminal's line ends
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("%s does not show %q:\n%s", what, w, stripCSI(out))
		}
	}
}

// The visible forms of the injected text (termtext.Text).
const (
	shownAnswer = "answer ␛]52;c;QU5TV0VS␇␛[38;5;196m␛[2J␍fake␈␈line"
	shownError  = "boom ␛]52;c;RVJS␇␛[2;99;99t␛]0;t␇"
	shownChild  = "child ␛]52;c;Q0hJTEQ=␇␛[2;99;99t␛[2J␛]0;t␇"
	shownTitle  = "title ␛]52;c;VElUTEU=␇␛[2;99;99t␛[2J"
	shownTool   = "tool ␛]52;c;VE9PTA==␇␛[2;99;99t␛[2J"
)

// TestTerminalEscapeInjection: control sequences in model output, tool
// output, errors and stored titles never reach a terminal through `run`
// (the answer, the status tree or plain lines, the approval question, the
// errors) or `sessions list/show/events/tree`: they are shown visibly.
// The answer piped to a file and every JSON output stay exact.
func TestTerminalEscapeInjection(t *testing.T) {
	t.Parallel() // mostly waits on its CLI processes
	dir := t.TempDir()
	manifest := filepath.Join(dir, "inject.yaml")
	if err := os.WriteFile(manifest, []byte(injectionManifest), 0o644); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "s.db")
	runArgs := func(more ...string) []string {
		return append([]string{"run", "-c", manifest, "--allow", "Bash", "--workspace", dir}, more...)
	}

	// Piped: the answer is exact on stdout, stderr is safe. This run's
	// sessions are the ones `sessions` shows below.
	r := runCLI(t, dir, runArgs("--db", db, injectedPrompt)...)
	if r.code != exitIncomplete {
		t.Fatalf("run: exit %d, want %d (helper fails): %s", r.code, exitIncomplete, r.stderr)
	}
	if r.stdout != injectedAnswer+"\n" {
		t.Errorf("piped stdout = %q, want the answer exactly", r.stdout)
	}
	checkNoControls(t, "piped stderr", r.stderr)
	checkShows(t, "piped stderr", r.stderr, shownError, shownChild, "desc ␛]52;c;REVTQw==␇")
	rootID := regexp.MustCompile(`session (ses_\w+)`).FindStringSubmatch(r.stderr)
	if rootID == nil {
		t.Fatalf("no session id on stderr: %q", r.stderr)
	}

	for _, mode := range []struct{ name, env string }{{"tree", ""}, {"plain lines", "NO_COLOR=1"}} {
		t.Run("run on a terminal, "+mode.name, func(t *testing.T) {
			var env []string
			if mode.env != "" {
				env = []string{mode.env}
			}
			p := startPTYWith(t, env, true, runArgs("--db", ":memory:", injectedPrompt)...)
			code, screen := p.wait(t)
			if code != exitIncomplete {
				t.Fatalf("exit %d:\n%q", code, screen)
			}
			checkNotInjected(t, "the terminal", screen)
			checkShows(t, "the terminal", screen, shownAnswer, shownError)
		})
	}

	t.Run("approval question", func(t *testing.T) {
		p := startPTYWith(t, nil, true, "run", "-c", manifest, "--db", ":memory:", "--workspace", dir, "--agent", "asker", "go")
		p.waitFor("[y]es / [a]lways / [n]o")
		if _, err := p.ptmx.Write([]byte("n\n")); err != nil {
			t.Fatal(err)
		}
		_, screen := p.wait(t)
		checkNotInjected(t, "the terminal", screen)
		checkShows(t, "the terminal", screen, "? asker wants to run Bash echo ␛]52;c;QVNL␇␛[2;99;99t safe", "    command: echo ␛]52;c;QVNL␇␛[2;99;99t␍safe")
	})

	t.Run("error of a failed run", func(t *testing.T) {
		r := runCLI(t, dir, runArgs("--db", ":memory:", "--agent", "helper", "go")...)
		if r.code != 1 {
			t.Fatalf("exit %d, want 1: %s", r.code, r.stderr)
		}
		checkNoControls(t, "stderr", r.stderr)
		checkShows(t, "stderr", r.stderr, "agentpool: run failed: model test: "+shownError)
	})

	t.Run("validate", func(t *testing.T) {
		bad := filepath.Join(dir, "bad.yaml")
		os.WriteFile(bad, []byte("agents:\n  a:\n    model: test\n    \"key\\e]52;c;VkFM\\a\": 1\n"), 0o644)
		r := runCLI(t, dir, "validate", bad)
		if r.code != 1 {
			t.Fatalf("exit %d, want 1: %s", r.code, r.stderr)
		}
		checkNoControls(t, "stderr", r.stderr)
		checkShows(t, "stderr", r.stderr, "bad.yaml:4: agents.a.key␛]52;c;VkFM␇")
	})

	t.Run("jsonl piped is exact", func(t *testing.T) {
		r := runCLI(t, dir, runArgs("--db", ":memory:", "--output", "jsonl", injectedPrompt)...)
		if r.code != exitIncomplete {
			t.Fatalf("exit %d: %s", r.code, r.stderr)
		}
		lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
		for _, line := range lines {
			e, err := event.Decode([]byte(line))
			if err != nil {
				t.Fatalf("%v: %q", err, line)
			}
			again, err := event.AppendJSON(nil, e)
			if err != nil || string(again) != line {
				t.Errorf("a line is not the encoder's bytes:\n got %q\nwant %q", line, again)
			}
		}
		if got := rootAnswer(t, lines); got != injectedAnswer {
			t.Errorf("the answer in JSONL = %q, want %q", got, injectedAnswer)
		}
	})

	t.Run("jsonl on a terminal", func(t *testing.T) {
		p := startPTYWith(t, nil, true, runArgs("--db", ":memory:", "--output", "jsonl", injectedPrompt)...)
		code, screen := p.wait(t)
		if code != exitIncomplete {
			t.Fatalf("exit %d:\n%q", code, screen)
		}
		checkNoControls(t, "the terminal", screen)
		var lines []string
		for _, l := range strings.Split(screen, "\r\n") {
			if strings.HasPrefix(l, "{") {
				lines = append(lines, l)
			}
		}
		if got := rootAnswer(t, lines); got != injectedAnswer {
			t.Errorf("the answer in JSONL on a terminal = %q, want %q", got, injectedAnswer)
		}
	})

	sessionsCmds := []struct {
		name string
		args []string
	}{
		{"list", []string{"sessions", "list", "--db", db}},
		{"show", []string{"sessions", "show", "--db", db, rootID[1]}},
		{"events", []string{"sessions", "events", "--db", db, rootID[1]}},
		{"events --tree", []string{"sessions", "events", "--tree", "--db", db, rootID[1]}},
		{"tree", []string{"sessions", "tree", "--db", db, rootID[1]}},
	}
	for _, terminal := range []bool{true, false} {
		for _, c := range sessionsCmds {
			name, args := "sessions "+c.name+" piped", c.args
			if terminal {
				name = "sessions " + c.name + " on a terminal"
			}
			t.Run(name, func(t *testing.T) {
				var out string
				if terminal {
					p := startPTYWith(t, nil, true, args...)
					code, screen := p.wait(t)
					if code != 0 {
						t.Fatalf("exit %d:\n%q", code, screen)
					}
					out = screen
				} else {
					r := runCLI(t, dir, args...)
					if r.code != 0 {
						t.Fatalf("exit %d: %s", r.code, r.stderr)
					}
					out = r.stdout
				}
				checkNoControls(t, "the output", out)
				switch args[1] {
				case "list":
					checkShows(t, "the list", out, shownTitle, shownChild)
				case "show":
					checkShows(t, "the conversation", out, shownTitle, shownAnswer+"\nsecond\tcol", shownTool)
				case "events":
					checkShows(t, "the events", out, shownError, shownTool)
				case "tree":
					checkShows(t, "the tree", out, shownError)
				}
			})
		}
	}

	t.Run("sessions json exact", func(t *testing.T) {
		l := runCLI(t, dir, "sessions", "list", "--db", db, "--json")
		if l.code != 0 {
			t.Fatalf("exit %d: %s", l.code, l.stderr)
		}
		// encoding/json's bytes: C0 controls escaped, C1 ones raw.
		if !strings.Contains(l.stdout, `title \u001b]52;c;VElUTEU=\u0007\u001b[2;99;99t`+"\u009b2J") {
			t.Errorf("piped JSON is not the encoder's bytes:\n%s", l.stdout)
		}
		checkTitles(t, l.stdout)

		p := startPTYWith(t, nil, true, "sessions", "list", "--db", db, "--json")
		if code, screen := p.wait(t); code != 0 {
			t.Fatalf("exit %d:\n%q", code, screen)
		} else {
			checkNoControls(t, "JSON on the terminal", screen)
			checkTitles(t, strings.ReplaceAll(screen, "\r\n", "\n"))
		}

		s := runCLI(t, dir, "sessions", "show", "--db", db, "--json", rootID[1])
		var msgs []session.Message
		if err := json.Unmarshal([]byte(s.stdout), &msgs); err != nil {
			t.Fatalf("%v: %s", err, s.stdout)
		}
		last := msgs[len(msgs)-1]
		if last.Role != model.RoleAssistant || len(last.Parts) == 0 || last.Parts[0].Text != injectedAnswer {
			t.Errorf("the stored answer in JSON = %+v, want %q", last, injectedAnswer)
		}
	})
}

// rootAnswer is the content of the root's stream_complete among JSONL
// lines.
func rootAnswer(t *testing.T, lines []string) string {
	t.Helper()
	for _, l := range lines {
		e, err := event.Decode([]byte(l))
		if err != nil {
			t.Fatalf("%v: %q", err, l)
		}
		if sc, ok := e.(event.StreamComplete); ok {
			return sc.Message.Content
		}
	}
	t.Fatalf("no stream_complete of the root in %d lines", len(lines))
	return ""
}

// checkTitles decodes `sessions list --json` and checks both titles are
// the exact stored ones.
func checkTitles(t *testing.T, out string) {
	t.Helper()
	var list []session.Session
	if err := json.NewDecoder(bytes.NewReader([]byte(out))).Decode(&list); err != nil {
		t.Fatalf("%v: %q", err, out)
	}
	var titles []string
	for _, s := range list {
		titles = append(titles, s.Title)
	}
	if !slices.Contains(titles, injectedPrompt) || !slices.Contains(titles, injectedChild) {
		t.Errorf("titles in JSON = %q, want %q and %q exactly", titles, injectedPrompt, injectedChild)
	}
}
