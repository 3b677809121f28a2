package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/session"
)

// TestA2APoolCallsPool: `agentpool run` on a manifest whose team has a
// `type: a2a` member calls another pool served by `agentpool serve a2a`;
// `sessions tree` shows the work in both stores: the caller's member
// session, and the served pool's whole tree.
func TestA2APoolCallsPool(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	remote, local := filepath.Join(dir, "remote.yaml"), filepath.Join(dir, "local.yaml")
	remoteDB, localDB := filepath.Join(dir, "remote.db"), filepath.Join(dir, "local.db")
	os.WriteFile(remote, []byte(`
default_agent: planner
agents:
  planner:
    model:
      type: test
      call_tools: [task]
      tool_args:
        task: {agent_or_team: research_team, prompt: "Collect facts.", description: "Research"}
      custom_output_text: "Plan complete."
    tools: [{type: subagent}]
  searcher:
    model: {type: test, custom_output_text: "Search finished."}
  critic:
    model: {type: scripted, turns: [{text: "Looks right."}]}
teams:
  research_team: {mode: parallel, members: [searcher, critic]}
`), 0o644)
	addr := startHTTPServerIn(t, dir, "a2a", "-c", remote, "--db", remoteDB)
	os.WriteFile(local, []byte(`
default_agent: lead
agents:
  lead:
    model:
      type: test
      call_tools: [task]
      tool_args:
        task: {agent_or_team: crew, prompt: "Research goroutines.", description: "crew"}
      custom_output_text: "Lead done."
    tools: [{type: subagent}]
  planner:
    type: a2a
    url: http://`+addr+`/agents/planner
  checker:
    model: {type: scripted, turns: [{text: "Checked."}]}
teams:
  crew: {mode: parallel, members: [planner, checker]}
`), 0o644)
	r := runCLI(t, dir, "run", "-c", local, "--db", localDB, "--output", "jsonl", "Go.")
	if r.code != 0 {
		t.Fatalf("run: exit %d: %s", r.code, r.stderr)
	}
	evs := decodeJSONL(t, r.stdout)
	root := evs[0].(event.RunStarted).SessionID
	check := func(db, root string, agents ...string) string {
		t.Helper()
		_, _, _, all := treeOf(t, dir, db, root)
		var names []string
		for _, s := range all {
			names = append(names, s.AgentName)
			if s.Status != session.StatusCompleted {
				t.Errorf("%s (%s): %s", s.AgentName, s.ID, s.Status)
			}
		}
		slices.Sort(names)
		if want := slices.Sorted(slices.Values(agents)); !slices.Equal(names, want) {
			t.Errorf("the tree of %s in %s: %v, want %v", root, db, names, want)
		}
		text := runCLI(t, dir, "sessions", "tree", "--db", db, root)
		for _, a := range agents {
			if !strings.Contains(text.stdout, a) {
				t.Errorf("sessions tree of %s lacks %s:\n%s", root, a, text.stdout)
			}
		}
		return text.stdout
	}
	t.Logf("the caller's tree:\n%s", check(localDB, root, "lead", "crew", "planner", "checker"))
	var roots []session.Session
	if err := json.Unmarshal([]byte(runCLI(t, dir, "sessions", "list", "--db", remoteDB, "--roots", "--json").stdout), &roots); err != nil || len(roots) != 1 {
		t.Fatalf("the served pool's roots: %v (%v), want 1", roots, err)
	}
	t.Logf("the served pool's tree:\n%s", check(remoteDB, roots[0].ID, "planner", "research_team", "searcher", "critic"))
	if !strings.Contains(r.stdout, "Plan complete.") {
		t.Errorf("the caller's stream lacks the remote's answer")
	}
}
