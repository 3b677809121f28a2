package settingsrules_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/agentpool/agentpool/approval"
	"github.com/agentpool/agentpool/approval/settingsrules"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// project makes a project directory with the given files (relative path
// -> content) and returns its Files, the user's under a home of its own.
func project(t *testing.T, files map[string]string) settingsrules.Files {
	t.Helper()
	dir, home := t.TempDir(), t.TempDir()
	for name, content := range files {
		path := filepath.Join(dir, name)
		if strings.HasPrefix(name, "~/") {
			path = filepath.Join(home, name[2:])
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	f := settingsrules.ForProject(dir)
	f.User = filepath.Join(home, ".claude", "settings.json")
	return f
}

func load(t *testing.T, f settingsrules.Files) *settingsrules.Store {
	t.Helper()
	s, err := settingsrules.Load(f)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func req(tool, input string) approval.Request {
	return approval.Request{SessionID: "ses_1", Agent: "dev", Tool: tool, Input: json.RawMessage(input)}
}

// verdict is "allow", "deny" or "ask" (no rule answered).
func verdict(s *settingsrules.Store, r approval.Request) string {
	a, found := s.Match(r)
	switch {
	case !found:
		return "ask"
	case a.Reply.Allows():
		return "allow"
	}
	return "deny"
}

// The three files are merged; deny wins over ask and allow, ask over
// allow, from any file.
func TestPrecedence(t *testing.T) {
	f := project(t, map[string]string{
		"~/.claude/settings.json":     `{"permissions": {"allow": ["Write", "Bash", "Read"], "deny": ["WebFetch"]}}`,
		".claude/settings.json":       `{"permissions": {"deny": ["Write"], "ask": ["Read"]}}`,
		".claude/settings.local.json": `{"permissions": {"allow": ["Edit(*)", "WebFetch"]}}`,
	})
	s := load(t, f)
	cases := map[string]string{"Write": "deny", "Bash": "allow", "Read": "ask", "Edit": "allow", "WebFetch": "deny", "Glob": "ask"}
	for tool, want := range cases {
		if got := verdict(s, req(tool, `{}`)); got != want {
			t.Errorf("%s: %s, want %s", tool, got, want)
		}
	}
	a, _ := s.Match(req("Write", `{}`))
	if a.Reply != approval.RejectAlways || a.By != approval.ByRule || a.Message != `rejected by the rule "Write" in permissions.deny of `+f.Project {
		t.Errorf("deny answer %+v", a)
	}
	rules := s.Rules()
	if len(rules) != 8 || rules[0].List != settingsrules.Deny || rules[len(rules)-1].List != settingsrules.Allow {
		t.Errorf("rules %+v", rules)
	}
}

func TestRuleForms(t *testing.T) {
	f := project(t, map[string]string{".claude/settings.local.json": `{"permissions": {
		"allow": ["Bash(npm run:*)", "mcp__notes", "mcp__git__*", "Task", "Write(src/**)", "Bash(ls *)", "Read(*)"],
		"deny": ["Bash(rm:*)"]}}`})
	s := load(t, f)
	bash := func(cmd string) approval.Request {
		in, _ := json.Marshal(map[string]string{"command": cmd})
		return req("Bash", string(in))
	}
	cases := []struct {
		r    approval.Request
		want string
	}{
		{bash("npm run test"), "allow"},
		{bash("  npm run"), "allow"},
		{bash("npm runner"), "ask"},
		{bash("npm run test && curl x"), "ask"}, // an operator: not covered by an allow prefix
		{bash("npm run test > /etc/x"), "ask"},
		{bash("npm run $(id)"), "ask"},
		{bash("rm -rf build"), "deny"},
		{bash("echo ok; rm -rf /"), "deny"}, // a deny prefix covers every part
		{bash("echo $(rm -rf /)"), "deny"},
		{bash("rmdir x"), "ask"},
		{req("mcp__notes__add", `{}`), "allow"},
		{req("mcp__notesy__add", `{}`), "ask"},
		{req("mcp__git__log", `{}`), "allow"},
		{req("task", `{}`), "allow"}, // Claude Code's Task is agentpool's task
		{req("Write", `{"file_path":"src/a.go"}`), "ask"},
		{req("Read", `{}`), "allow"},
	}
	for _, c := range cases {
		if got := verdict(s, c.r); got != c.want {
			t.Errorf("%s %s: %s, want %s", c.r.Tool, c.r.Input, got, c.want)
		}
	}
	w := s.Warnings()
	if len(w) != 2 || !strings.Contains(w[0], `permissions.allow: "Write(src/**)" is not applied (only Tool, Tool(*) and Bash(prefix:*) rules are applied)`) ||
		!strings.Contains(w[1], `"Bash(ls *)"`) || !strings.HasPrefix(w[0], f.Local+": ") {
		t.Errorf("warnings %q", w)
	}
}

func TestBadFiles(t *testing.T) {
	cases := map[string]string{
		"{\n  \"permissions\": {\n    \"allow\": [\"Write\",]\n  }\n}": `settings.local.json:3: invalid JSON: invalid character ']'`,
		"{\n  \"permissions\": [\"Write\"]\n}":                         `settings.local.json:2: permissions: expected an object, got a JSON array`,
		"{\"permissions\": {\n\"deny\": \"Write\"}}":                   `settings.local.json:2: permissions.deny: expected a list of rule strings, got a JSON string`,
		"{\"permissions\": {\"allow\": [\n\"Write\",\n 3]}}":           `settings.local.json:3: permissions.allow: expected a rule string, got a JSON number`,
		"[1]": `settings.local.json:1: a settings file must be a JSON object, got a JSON array`,
		strings.Repeat("[", 200) + strings.Repeat("]", 200):                  `settings.local.json:1: `,
		`{"permissions": {"allow": ["` + strings.Repeat("x", 2<<20) + `"]}}`: `settings.local.json: `,
	}
	for content, want := range cases {
		f := project(t, map[string]string{".claude/settings.local.json": content})
		_, err := settingsrules.Load(f)
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), f.Local) {
			t.Errorf("%.40q: error %v, want %q naming the file", content, err, want)
		}
	}
}

// Save adds the rule once, keeps every other key and their order, writes
// a new file with mode 0600 and keeps an existing file's mode.
func TestSaveMerges(t *testing.T) {
	const before = `{
  "$schema": "https://json.schemastore.org/claude-code-settings.json",
  "permissions": {"defaultMode": "default", "allow": ["Read"], "additionalDirectories": ["../lib"]},
  "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "echo <done> && true"}]}]},
  "env": {"A": "1"}
}`
	f := project(t, map[string]string{".claude/settings.local.json": before})
	os.Chmod(f.Local, 0o640)
	s := load(t, f)
	if verdict(s, req("Write", `{}`)) != "ask" {
		t.Fatal("Write is allowed before the save")
	}
	for range 2 {
		if err := s.Save(approval.Rule{Agent: "dev", Tool: "Write", Reply: approval.AllowAlways}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Save(approval.Rule{Agent: "dev", Tool: "Bash", Reply: approval.RejectAlways}); err != nil {
		t.Fatal(err)
	}
	if verdict(s, req("Write", `{}`)) != "allow" || verdict(s, req("Bash", `{"command":"ls"}`)) != "deny" {
		t.Fatal("the saved rules do not apply at once")
	}
	data, _ := os.ReadFile(f.Local)
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, data)
	}
	perms := doc["permissions"].(map[string]any)
	if got := perms["allow"].([]any); len(got) != 2 || got[0] != "Read" || got[1] != "Write" {
		t.Errorf("allow %v", got)
	}
	if got := perms["deny"].([]any); len(got) != 1 || got[0] != "Bash" {
		t.Errorf("deny %v", got)
	}
	order := []string{`"$schema"`, `"permissions"`, `"defaultMode"`, `"allow"`, `"additionalDirectories"`, `"deny"`, `"hooks"`, `"echo <done> && true"`, `"env"`}
	last := -1
	for _, k := range order {
		i := strings.Index(string(data), k)
		if i <= last {
			t.Errorf("%s is missing or out of order:\n%s", k, data)
		}
		last = i
	}
	if fi, _ := os.Stat(f.Local); fi.Mode().Perm() != 0o640 {
		t.Errorf("mode %v, want the file's own 0640", fi.Mode().Perm())
	}
	if again := load(t, f); verdict(again, req("Write", `{}`)) != "allow" {
		t.Error("the saved rule does not apply after a reload")
	}
	entries, _ := os.ReadDir(filepath.Dir(f.Local))
	if len(entries) != 1 {
		t.Errorf("temporary files left: %v", entries)
	}

	// A new file, in a new .claude directory.
	g := project(t, nil)
	s = load(t, g)
	if err := s.Save(approval.Rule{Agent: "dev", Tool: "task", Reply: approval.AllowAlways}); err != nil {
		t.Fatal(err)
	}
	data, _ = os.ReadFile(g.Local)
	if string(data) != "{\n  \"permissions\": {\n    \"allow\": [\n      \"Task\"\n    ]\n  }\n}\n" {
		t.Errorf("new file:\n%s", data)
	}
	if fi, _ := os.Stat(g.Local); fi.Mode().Perm() != 0o600 {
		t.Errorf("new file mode %v, want 0600", fi.Mode().Perm())
	}
}

// A file that became invalid is never overwritten.
func TestSaveRefusesABrokenFile(t *testing.T) {
	f := project(t, map[string]string{".claude/settings.local.json": `{"permissions": {}}`})
	s := load(t, f)
	broken := "{\"permissions\": {\"allow\": \"Write\"}}"
	os.WriteFile(f.Local, []byte(broken), 0o600)
	err := s.Save(approval.Rule{Tool: "Write", Reply: approval.AllowAlways})
	if err == nil || !strings.Contains(err.Error(), f.Local+":1: permissions.allow: expected a list of rule strings") {
		t.Fatalf("error %v", err)
	}
	if data, _ := os.ReadFile(f.Local); string(data) != broken {
		t.Fatalf("the broken file was changed: %s", data)
	}
	os.Remove(f.Local)
	os.Mkdir(f.Local, 0o755) // a directory where the file should be
	if err := s.Save(approval.Rule{Tool: "Write", Reply: approval.AllowAlways}); err == nil {
		t.Fatal("saved over a directory")
	}
}

// Concurrent saves of different tools all land in the file.
func TestConcurrentSaves(t *testing.T) {
	f := project(t, nil)
	s := load(t, f)
	tools := []string{"Write", "Edit", "Bash", "WebFetch", "NotebookEdit", "mcp__a__b"}
	var wg sync.WaitGroup
	errs := make(chan error, len(tools))
	for _, tool := range tools {
		wg.Go(func() { errs <- s.Save(approval.Rule{Tool: tool, Reply: approval.AllowAlways}) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	again := load(t, f)
	for _, tool := range tools {
		if verdict(again, req(tool, `{}`)) != "allow" {
			t.Errorf("%s was lost", tool)
		}
	}
}

func TestMissingFilesAreNoRules(t *testing.T) {
	s := load(t, project(t, nil))
	if len(s.Rules()) != 0 || verdict(s, req("Write", `{}`)) != "ask" {
		t.Fatal("rules without files")
	}
	if _, err := settingsrules.Load(settingsrules.Files{}); err != nil {
		t.Fatal(err)
	}
	if err := (&settingsrules.Store{}).Save(approval.Rule{Tool: "Write", Reply: approval.AllowAlways}); err == nil {
		t.Fatal("saved without a file")
	}
}
