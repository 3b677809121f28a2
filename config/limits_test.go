package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// members returns a flow list of n copies of name.
func members(name string, n int) string {
	return "[" + strings.TrimSuffix(strings.Repeat(name+", ", n), ", ") + "]"
}

// A declared team takes one spawn for itself and one per member (members
// of member teams included); a team that cannot fit max_spawns is refused
// at its line, naming the limit.
func TestTeamSpawnBudget(t *testing.T) {
	got := parseErr(t, "agents:\n  w: {model: test}\nteams:\n  big:\n    mode: parallel\n    members: "+members("w", 2000)+"\n")
	diffLines(t, got, []string{
		`agentpool.yaml:4: teams.big: team "big" needs 2001 spawns per run (itself and 2000 members, counting members of member teams), more than limits.max_spawns (1000): split the team or raise limits.max_spawns`,
	})

	// Exactly the budget fits: the team and 999 members.
	mustParse(t, "agents:\n  w: {model: test}\nteams:\n  big: {mode: parallel, members: "+members("w", 999)+"}\n")

	// Nested teams count their members too: outer = itself + inner (itself
	// + 2) + w = 5.
	const nested = "agents:\n  w: {model: test}\nteams:\n  outer: {mode: sequential, members: [inner, w]}\n  inner: {mode: parallel, members: [w, w]}\n"
	mustParse(t, nested+"limits: {max_spawns: 5}\n")
	got = parseErr(t, nested+"limits: {max_spawns: 4}\n")
	diffLines(t, got, []string{
		`agentpool.yaml:4: teams.outer: team "outer" needs 5 spawns per run (itself and 4 members, counting members of member teams), more than limits.max_spawns (4): split the team or raise limits.max_spawns`,
	})

	// Teams of teams multiply: 80 levels of pairs overflow no counter.
	var b strings.Builder
	b.WriteString("agents:\n  w: {model: test}\nteams:\n")
	for i := range 80 {
		fmt.Fprintf(&b, "  t%d: {mode: parallel, members: [t%d, t%d]}\n", i, i+1, i+1)
	}
	b.WriteString("  t80: {mode: parallel, members: [w]}\n")
	if got := parseErr(t, b.String()); !strings.Contains(got[0], `teams.t0: team "t0" needs 1099511627776 spawns`) {
		t.Errorf("first error: %s", got[0])
	}
}

// require_all applies to both modes; its default follows the mode: a
// sequential team stops at the first failure, a parallel one reports its
// failed members unless require_all is set.
func TestRequireAllDefaultsByMode(t *testing.T) {
	m := mustParse(t, `agents:
  a: {model: test}
teams:
  par: {mode: parallel, members: [a]}
  seq: {mode: sequential, members: [a]}
  strict: {mode: parallel, members: [a], require_all: true}
  loose: {mode: sequential, members: [a], require_all: false}
`)
	for name, want := range map[string]bool{"par": false, "seq": true, "strict": true, "loose": false} {
		if got := m.Teams[name].RequireAll; got != want {
			t.Errorf("team %s: RequireAll = %v, want %v", name, got, want)
		}
	}
}

// base_url must be an http(s) URL with a host: a typo would otherwise only
// show up as a connection error at run time.
func TestBaseURL(t *testing.T) {
	for _, good := range []string{"http://127.0.0.1:11434/v1", "https://api.example.com", "https://gateway.example.com/anthropic/"} {
		mustParse(t, "agents:\n  a:\n    model: {type: openai, model: m, base_url: \""+good+"\"}\n")
	}
	for _, bad := range []string{"localhost:11434/v1", "127.0.0.1:8080", "ftp://example.com", "http://", "http//example.com", "not a url", "https://exa mple.com"} {
		got := parseErr(t, "agents:\n  a:\n    model:\n      type: anthropic\n      model: m\n      base_url: \""+bad+"\"\n")
		diffLines(t, got, []string{
			`agentpool.yaml:6: agents.a.model.base_url: expected an http:// or https:// URL with a host, such as "http://127.0.0.1:11434/v1", got "` + bad + `"`,
		})
	}
}

// A syntax error is reported at the line it is on, not at the line where
// the YAML parser's enclosing context began.
func TestSyntaxErrorLine(t *testing.T) {
	for _, tc := range []struct{ name, src, want string }{
		{"list item in a mapping", "agents:\n  a:\n    model: test\n  - x\n",
			`agentpool.yaml:4: invalid YAML: did not find expected key`},
		{"text after a quoted scalar", "agents:\n  a: {model: test}\n  b: {model: test}\n  c: \"x\" y\n",
			`agentpool.yaml:4: invalid YAML: did not find expected key`},
		{"deeper context", "agents:\n  a:\n    model: test\n    description: fine\n\n    tools: [subagent]\n   oops: 1\n",
			`agentpool.yaml:7: invalid YAML: did not find expected key`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			diffLines(t, parseErr(t, tc.src), []string{tc.want})
		})
	}
}

// CheckFiles finds the hook settings files a manifest names that do not
// exist, at their lines; Load alone does not look at them.
func TestCheckFiles(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "present.json"), []byte(`{}`), 0o644)
	write := func(name, src string) *Manifest {
		path := filepath.Join(dir, name)
		os.WriteFile(path, []byte(src), 0o644)
		m, err := Load(path)
		if err != nil {
			t.Fatalf("Load: %v", err)
		}
		return m
	}
	m := write("list.yaml", "agents:\n  a: {model: test}\nhooks:\n  settings:\n    - present.json\n    - missing.json\n")
	err := CheckFiles("list.yaml", m)
	want := `list.yaml:6: hooks.settings[1]: settings file "missing.json" does not exist (` + filepath.Join(dir, "missing.json") + `)`
	if err == nil || err.Error() != want {
		t.Errorf("CheckFiles = %v\nwant %s", err, want)
	}
	m = write("one.yaml", "agents:\n  a: {model: test}\nhooks: {settings: gone/settings.json}\n")
	err = CheckFiles("one.yaml", m)
	want = `one.yaml:3: hooks.settings: settings file "gone/settings.json" does not exist (` + filepath.Join(dir, "gone", "settings.json") + `)`
	if err == nil || err.Error() != want {
		t.Errorf("CheckFiles = %v\nwant %s", err, want)
	}
	if err := CheckFiles("ok.yaml", write("ok.yaml", "agents:\n  a: {model: test}\nhooks: {settings: present.json}\n")); err != nil {
		t.Errorf("CheckFiles with every file present: %v", err)
	}
	// A Claude Code plugin directory is accepted, another directory is not.
	os.MkdirAll(filepath.Join(dir, "plug", "hooks"), 0o755)
	os.WriteFile(filepath.Join(dir, "plug", "hooks", "hooks.json"), []byte(`{}`), 0o644)
	os.MkdirAll(filepath.Join(dir, "agents-only", ".claude-plugin"), 0o755)
	os.MkdirAll(filepath.Join(dir, "plain"), 0o755)
	m = write("dirs.yaml", "agents:\n  a: {model: test}\nhooks: {settings: [plug, agents-only, plain]}\n")
	err = CheckFiles("dirs.yaml", m)
	want = `dirs.yaml:3: hooks.settings[2]: settings file "plain" is a directory (` + filepath.Join(dir, "plain") + `) and no Claude Code plugin: it has neither hooks/hooks.json nor .claude-plugin`
	if err == nil || err.Error() != want {
		t.Errorf("CheckFiles = %v\nwant %s", err, want)
	}
	if err := CheckFiles("default", Default()); err != nil {
		t.Errorf("CheckFiles of the default manifest: %v", err)
	}
}

// TestBaseURLQueryKept: a base_url's query (Azure's "?api-version=...")
// is kept as written, for the provider to send with every request; one
// that would not be sent as written (a bad escape, a fragment) is an
// error at its line.
func TestBaseURLQueryKept(t *testing.T) {
	azure := "https://x.openai.azure.com/openai/deployments/d?api-version=2024-06-01&tag=a%2Fb"
	m := mustParse(t, "agents:\n  a:\n    model: {type: openai, model: m, base_url: \""+azure+"\"}\n")
	if got := m.Agents["a"].Model.BaseURL; got != azure {
		t.Errorf("BaseURL = %q, want %q", got, azure)
	}
	for bad, why := range map[string]string{
		"https://h.example/v1?api-version=%zz": `bad query in "https://h.example/v1?api-version=%zz": invalid URL escape "%zz" (the query is sent with every request, as written)`,
		"https://h.example/v1?a=1;b=2":         `bad query in "https://h.example/v1?a=1;b=2": invalid semicolon separator in query (the query is sent with every request, as written)`,
		"https://h.example/v1#models":          `a fragment (#models) is never sent to the server; remove it from "https://h.example/v1#models"`,
	} {
		got := parseErr(t, "agents:\n  a:\n    model:\n      type: anthropic\n      model: m\n      base_url: \""+bad+"\"\n")
		diffLines(t, got, []string{`agentpool.yaml:6: agents.a.model.base_url: ` + why})
	}
}

// TestToolCallsPerTurnCap: max_tool_calls_per_turn is read per agent
// (inherited like any key; 0 is the runtime default), and a value that is
// not a count is an error at its line.
func TestToolCallsPerTurnCap(t *testing.T) {
	m := mustParse(t, "agents:\n  a:\n    model: test\n    max_tool_calls_per_turn: 8\n  b:\n    inherits: a\n  c:\n    model: test\n")
	for name, want := range map[string]int{"a": 8, "b": 8, "c": 0} {
		if got := m.Agents[name].MaxToolCallsPerTurn; got != want {
			t.Errorf("agent %s: MaxToolCallsPerTurn = %d, want %d", name, got, want)
		}
	}
	for bad, want := range map[string]string{
		"-1":   `agentpool.yaml:4: agents.a.max_tool_calls_per_turn: must not be negative, got -1`,
		"many": `agentpool.yaml:4: agents.a.max_tool_calls_per_turn: expected an integer, got "many"`,
		"2.5":  `agentpool.yaml:4: agents.a.max_tool_calls_per_turn: expected an integer, got 2.5`,
	} {
		diffLines(t, parseErr(t, "agents:\n  a:\n    model: test\n    max_tool_calls_per_turn: "+bad+"\n"), []string{want})
	}
}

// TestBudget: an agent's budget is read (inherited like any key; AgentPool's
// usage_limits.total_tokens_limit is its tokens), and a budget out of
// bounds is an error with its file, line and field.
func TestBudget(t *testing.T) {
	m := mustParse(t, "agents:\n  a:\n    model: test\n    budget: {tokens: 10000, cost_usd: 0.5}\n  b:\n    inherits: a\n"+
		"  c:\n    model: test\n    usage_limits: {total_tokens_limit: 700}\n  d:\n    model: test\n")
	for name, want := range map[string]Budget{"a": {10000, 0.5}, "b": {10000, 0.5}, "c": {Tokens: 700}, "d": {}} {
		if got := m.Agents[name].Budget; got != want {
			t.Errorf("agent %s: Budget = %+v, want %+v", name, got, want)
		}
	}
	for bad, want := range map[string]string{
		"{tokens: -1}":            `agentpool.yaml:4: agents.a.budget.tokens: must not be negative, got -1`,
		"{tokens: 2000000000000}": `agentpool.yaml:4: agents.a.budget.tokens: at most 1099511627776 tokens, got 2000000000000`,
		"{cost_usd: -0.1}":        `agentpool.yaml:4: agents.a.budget.cost_usd: must not be negative, got -0.1`,
		"{cost_usd: 1e9}":         `agentpool.yaml:4: agents.a.budget.cost_usd: at most 1e+06 US dollars, got 1e+09`,
		"{cost_usd: lots}":        `agentpool.yaml:4: agents.a.budget.cost_usd: expected a number, got "lots"`,
		"{dollars: 3}":            `agentpool.yaml:4: agents.a.budget.dollars: unknown field "dollars"`,
	} {
		diffLines(t, parseErr(t, "agents:\n  a:\n    model: test\n    budget: "+bad+"\n"), []string{want})
	}
}

// TestBudgetOnTemporalWarns: an agent's budget is not enforced on the
// Temporal engine, and the manifest says so at the agent's line.
func TestBudgetOnTemporalWarns(t *testing.T) {
	m := mustParse(t, "execution: {engine: temporal, address: 127.0.0.1:7233}\nagents:\n  a:\n    model: test\n    budget: {cost_usd: 1}\n  b:\n    model: test\n")
	if len(m.Warnings) != 1 || m.Warnings[0].Line != 3 || m.Warnings[0].Field != "agents.a.budget" ||
		!strings.Contains(m.Warnings[0].Msg, "not enforced with execution.engine: temporal") {
		t.Fatalf("warnings %+v", m.Warnings)
	}
	if m := mustParse(t, "agents:\n  a:\n    model: test\n    budget: {cost_usd: 1}\n"); len(m.Warnings) != 0 {
		t.Fatalf("in process: warnings %+v", m.Warnings)
	}
}
