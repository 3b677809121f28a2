package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// teamManifest: lead delegates to coder, coder to writer, and writer's
// tool calls ask for approval (Write and Bash ask by default).
func teamManifest(writerCalls ...string) string {
	var turns strings.Builder
	for _, c := range writerCalls {
		turns.WriteString("        - tool_calls: [" + c + "]\n")
	}
	return `default_agent: lead
agents:
  lead:
    tools: [subagent]
    model:
      type: scripted
      turns:
        - tool_calls: [{name: task, args: {agent_or_team: coder, prompt: go}}]
        - text: lead done
  coder:
    tools: [subagent]
    model:
      type: scripted
      turns:
        - tool_calls: [{name: task, args: {agent_or_team: writer, prompt: go}}]
        - text: coder done
  writer:
    tools: [file_access, execution]
    model:
      type: scripted
      turns:
` + turns.String() + `        - text: writer done
`
}

func writeCall(name string) string {
	return `{name: Write, args: {file_path: notes/` + name + `, content: "` + name + `\n"}}`
}

// newProject writes the manifest in a project directory of its own, where
// the settings files are looked for, and returns the manifest's path.
func newProject(t *testing.T, manifest string) (dir, path string) {
	t.Helper()
	dir = t.TempDir()
	path = filepath.Join(dir, "agentpool.yaml")
	if err := os.WriteFile(path, []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, path
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// TestRunAsksOnTheTerminal: a grandchild's tool calls are asked about on
// the terminal, one at a time, naming the agent by its path; y runs the
// tool once, a runs it and saves the rule (a later Write is not asked
// about), n denies it, which the run's summary reports. The next run,
// without a terminal, is answered by the saved rule.
func TestRunAsksOnTheTerminal(t *testing.T) {
	dir, manifest := newProject(t, teamManifest(writeCall("a.md"), writeCall("b.md"), writeCall("c.md"),
		`{name: Bash, args: {command: "echo no"}}`))
	r := startPTY(t, nil, "run", "-c", manifest, "--db", ":memory:", "--workspace", dir, "go")
	prompt := answerPrompt
	for i, answer := range []string{"y", "a", "n"} {
		// One question at a time: the next comes once this one is answered.
		r.waitForCount(prompt, i+1)
		if _, err := r.ptmx.Write([]byte(answer + "\n")); err != nil {
			t.Fatal(err)
		}
	}
	code, screen := r.wait(t)
	plain := strings.ReplaceAll(stripCSI(screen), "\r", "")
	if code != exitIncomplete {
		t.Fatalf("exit %d, want %d:\n%s", code, exitIncomplete, plain)
	}
	for _, want := range []string{
		"? lead › coder › writer wants to run Write notes/a.md\n    file_path: notes/a.md\n    content: a.md\n",
		"? lead › coder › writer wants to run Write notes/b.md\n",
		"Write is allowed from now on, for every agent (permissions.allow of " + filepath.Join(dir, ".claude", "settings.local.json") + ")",
		"? lead › coder › writer wants to run Bash echo no\n    command: echo no\n",
		"✗ lead › coder › writer: Bash echo no denied: rejected by the user in the terminal",
		"run completed, but 1 tool call was denied approval (Bash by writer)",
	} {
		if !strings.Contains(plain, want) {
			t.Errorf("the terminal never showed %q:\n%s", want, plain)
		}
	}
	if strings.Contains(plain, "notes/c.md\n    file_path") {
		t.Errorf("c.md was asked about after always:\n%s", plain)
	}
	for _, f := range []string{"a.md", "b.md", "c.md"} {
		if !fileExists(filepath.Join(dir, "notes", f)) {
			t.Errorf("notes/%s was not written", f)
		}
	}
	data, err := os.ReadFile(filepath.Join(dir, ".claude", "settings.local.json"))
	if err != nil {
		t.Fatal(err)
	}
	var settings struct{ Permissions struct{ Allow []string } }
	if err := json.Unmarshal(data, &settings); err != nil || len(settings.Permissions.Allow) != 1 || settings.Permissions.Allow[0] != "Write" {
		t.Fatalf("settings file %s (%v)", data, err)
	}

	// The next run, piped: the saved rule answers, nobody is asked.
	os.WriteFile(manifest, []byte(teamManifest(writeCall("d.md"))), 0o644)
	p := runCLI(t, dir, "run", "-c", manifest, "--db", ":memory:", "--workspace", dir, "go")
	if p.code != 0 || !fileExists(filepath.Join(dir, "notes", "d.md")) || strings.Contains(p.stderr, "denied") {
		t.Fatalf("the next run: exit %d, stderr:\n%s", p.code, p.stderr)
	}
}

// TestRunApproveFlag: --approve allow and deny, the default without a
// terminal, the manifest's unattended answer, and bad values.
func TestRunApproveFlag(t *testing.T) {
	t.Parallel() // mostly waits on its CLI processes
	const one = `agents:
  a:
    tools: [file_access]
    model:
      type: scripted
      turns:
        - tool_calls: [{name: Write, args: {file_path: notes/a.md, content: x}}]
        - text: done
`
	t.Run("allow", func(t *testing.T) {
		t.Parallel()
		dir, manifest := newProject(t, one)
		r := runCLI(t, dir, "run", "-c", manifest, "--db", ":memory:", "--approve", "allow", "go")
		if r.code != 0 || !fileExists(filepath.Join(dir, "notes", "a.md")) ||
			!strings.Contains(r.stderr, "✓ a: Write notes/a.md allowed without asking (--approve allow)") {
			t.Fatalf("exit %d, stderr:\n%s", r.code, r.stderr)
		}
	})
	for _, c := range []struct{ name, why string }{{"deny", "--approve deny"}, {"default", "no terminal to ask on"}} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir, manifest := newProject(t, one)
			args := []string{"run", "-c", manifest, "--db", ":memory:", "go"}
			if c.name == "deny" {
				args = append(args, "--approve", "deny")
			}
			r := runCLI(t, dir, args...)
			if r.code != exitIncomplete || fileExists(filepath.Join(dir, "notes", "a.md")) {
				t.Fatalf("exit %d, want %d and no file; stderr:\n%s", r.code, exitIncomplete, r.stderr)
			}
			local := filepath.Join(dir, ".claude", "settings.local.json")
			for _, want := range []string{
				"✗ a: Write notes/a.md denied: Write needs approval (the tool_approval policy of agent a asks before Write) and nobody was asked: " + c.why,
				"run agentpool with --allow Write or --approve allow, set tool_approval: {Write: allow} on agent a in the manifest, " +
					`or add "Write" to permissions.allow in ` + local,
				"agentpool: run completed, but 1 tool call was denied approval (Write by a)",
			} {
				if !strings.Contains(r.stderr, want) {
					t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
				}
			}
		})
	}
	t.Run("unattended allow", func(t *testing.T) {
		t.Parallel()
		dir, manifest := newProject(t, one+"approvals: {unattended: allow, timeout: 10m}\n")
		r := runCLI(t, dir, "run", "-c", manifest, "--db", ":memory:", "go")
		if r.code != 0 || !strings.Contains(r.stderr, "allowed without asking (approvals.unattended: allow)") {
			t.Fatalf("exit %d, stderr:\n%s", r.code, r.stderr)
		}
	})
	t.Run("a settings deny wins over --approve allow", func(t *testing.T) {
		t.Parallel()
		dir, manifest := newProject(t, one)
		os.MkdirAll(filepath.Join(dir, ".claude"), 0o755)
		project := filepath.Join(dir, ".claude", "settings.json")
		os.WriteFile(project, []byte(`{"permissions": {"deny": ["Write"], "allow": ["Write", "Write(src/**)"]}}`), 0o644)
		r := runCLI(t, dir, "run", "-c", manifest, "--db", ":memory:", "--approve", "allow", "go")
		if r.code != exitIncomplete || !strings.Contains(r.stderr, `✗ a: Write notes/a.md denied: rejected by the rule "Write" in permissions.deny of `+project) ||
			!strings.Contains(r.stderr, `Write(src/**)\" is not applied (only Tool`) {
			t.Fatalf("exit %d, stderr:\n%s", r.code, r.stderr)
		}
		v := runCLI(t, dir, "validate", manifest)
		if v.code != 0 || !strings.Contains(v.stdout, "approval rule: deny Write ("+project+")") ||
			!strings.Contains(v.stdout, "approval rule: allow Write ("+project+")") || !strings.Contains(v.stderr, "warning: approval rules: ") {
			t.Fatalf("validate: exit %d\n%s%s", v.code, v.stdout, v.stderr)
		}
	})
	t.Run("errors", func(t *testing.T) {
		t.Parallel()
		dir, manifest := newProject(t, one)
		for args, want := range map[string]string{
			"--approve maybe": `--approve must be ask, allow or deny, not "maybe"`,
			"--approve ask":   "--approve ask needs a terminal on stdin and stderr",
		} {
			r := runCLI(t, dir, append([]string{"run", "-c", manifest, "--db", ":memory:"}, append(strings.Fields(args), "go")...)...)
			if r.code != 1 || !strings.Contains(r.stderr, want) {
				t.Errorf("%s: exit %d, stderr %q", args, r.code, r.stderr)
			}
		}
		os.MkdirAll(filepath.Join(dir, ".claude"), 0o755)
		local := filepath.Join(dir, ".claude", "settings.local.json")
		os.WriteFile(local, []byte("{\n  \"permissions\": {\"allow\": [\"Write\",]}\n}\n"), 0o600)
		r := runCLI(t, dir, "run", "-c", manifest, "--db", ":memory:", "go")
		if r.code != 1 || !strings.Contains(r.stderr, local+":2: invalid JSON") {
			t.Errorf("bad settings: exit %d, stderr %q", r.code, r.stderr)
		}
	})
}

// TestRunQuestionTimesOut: approvals.timeout ends a question nobody
// answers; the tool is denied.
func TestRunQuestionTimesOut(t *testing.T) {
	dir, manifest := newProject(t, teamManifest(writeCall("a.md"))+"approvals: {timeout: 20ms}\n")
	r := startPTY(t, nil, "run", "-c", manifest, "--db", ":memory:", "--workspace", dir, "go")
	code, screen := r.wait(t)
	plain := strings.ReplaceAll(stripCSI(screen), "\r", "")
	if code != exitIncomplete || !strings.Contains(plain, "(rejected: nobody answered within 20ms)") ||
		!strings.Contains(plain, "✗ lead › coder › writer: Write notes/a.md denied: nobody answered within 20ms") {
		t.Fatalf("exit %d:\n%s", code, plain)
	}
	if fileExists(filepath.Join(dir, "notes", "a.md")) {
		t.Error("the file was written")
	}
}

// waitForCount waits until the terminal received s n times (or the run
// ended).
func (r *ptyRun) waitForCount(s string, n int) {
	for {
		r.mu.Lock()
		ok := strings.Count(r.screen.String(), s) >= n
		r.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-r.read:
			return
		case <-r.more:
		}
	}
}
