package opencode

import (
	"strings"
	"testing"

	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/pool"
)

// GET /command lists the pool's slash commands and OpenCode's own init;
// POST /session/{id}/command runs one as a message, its template expanded
// with the arguments (the TUI's "/fix 42"; "/init" sends initPrompt); an
// unknown command is a 400 that names the known ones.
func TestSlashCommands(t *testing.T) {
	noLeaks(t)
	m, err := config.Parse("test.yaml", []byte("agents:\n  a: {model: {type: scripted, turns: [\"fixed\"]}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := pool.New(m, pool.Options{Commands: []pool.Command{
		{Name: "fix", Description: "Fix an issue", Source: "project", Template: "Fix issue $ARGUMENTS now."},
		{Name: "review", Template: "Review the diff."},
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	_, base := newServer(t, p, Options{})

	list := mustCall(t, 200, "GET", base+"/command", "")
	mustMatchResponse(t, "get", "/command", "200", list)
	if cs := arr(list); len(cs) != 3 || get(cs[0], "name") != "fix" || get(cs[0], "description") != "Fix an issue" ||
		len(arr(get(cs[0], "hints"))) != 1 || len(arr(get(cs[1], "hints"))) != 0 || get(cs[2], "name") != "init" {
		t.Fatalf("GET /command = %v", list)
	}

	sid := str(get(mustCall(t, 200, "POST", base+"/session", `{}`), "id"))
	ans := mustCall(t, 200, "POST", base+"/session/"+sid+"/command", `{"command":"fix","arguments":"42"}`)
	mustMatchResponse(t, "post", "/session/{sessionID}/command", "200", ans)
	if get(ans, "info", "role") != "assistant" {
		t.Fatalf("answer %v", ans)
	}
	var user string
	for _, msg := range arr(mustCall(t, 200, "GET", base+"/session/"+sid+"/message", "")) {
		if get(msg, "info", "role") == "user" {
			for _, prt := range arr(get(msg, "parts")) {
				user += str(get(prt, "text"))
			}
		}
	}
	if user != "Fix issue 42 now." {
		t.Errorf("the user message is %q, want the expanded template", user)
	}
	mustCall(t, 200, "POST", base+"/session/"+sid+"/command", `{"command":"init","arguments":""}`)
	if msgs := arr(mustCall(t, 200, "GET", base+"/session/"+sid+"/message", "")); len(msgs) < 3 ||
		str(get(arr(get(msgs[len(msgs)-2], "parts"))[0], "text")) != initPrompt {
		t.Errorf("/init did not send initPrompt: %v", msgs)
	}
	_, v := call(t, "POST", base+"/session/"+sid+"/command", `{"command":"nosuch","arguments":""}`)
	if b := strings.ToLower(str(get(v, "data", "message"))); !strings.Contains(b, `unknown command "nosuch"; available: fix, review, init`) {
		t.Errorf("unknown command answer %v", v)
	}
}
