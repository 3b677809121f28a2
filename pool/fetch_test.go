package pool_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentpool/agentpool/batteries"
	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/pool"
)

// The fetch toolset's allowed_hosts reach the agent's WebFetch: the agent
// that allows the loopback server reads it, the one that does not is told
// why it cannot, and so is the user (the tool call's result).
func TestFetchAllowedHostsPerAgent(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "local page")
	}))
	defer srv.Close()
	turns := fmt.Sprintf(`{type: scripted, turns: [{tool_calls: [{name: WebFetch, args: {url: %q}}]}, done]}`, srv.URL)
	p := compatPool(t, `
agents:
  open:
    model: `+turns+`
    tools: [{type: fetch, allowed_hosts: [127.0.0.1]}]
  closed:
    model: `+turns+`
    tools: [fetch]
`, pool.Options{Registry: batteries.Registry()})
	result := func(node string) event.ToolCallComplete {
		t.Helper()
		res, _, evs := runSpawns(t, p, node)
		for _, e := range evs {
			if _, inner := event.Unwrap(res.SessionID, e); inner != nil {
				if c, ok := inner.(event.ToolCallComplete); ok && c.ToolName == "WebFetch" {
					return c
				}
			}
		}
		t.Fatalf("%s: no WebFetch result", node)
		return event.ToolCallComplete{}
	}
	if r := result("open"); r.IsError || !strings.HasSuffix(r.ToolResult, "\n\nlocal page") {
		t.Errorf("open: %+v", r)
	}
	want := "WebFetch refused " + srv.URL + ": 127.0.0.1 is a loopback address; allow it with allowed_hosts in the fetch toolset"
	if r := result("closed"); !r.IsError || r.ToolResult != want {
		t.Errorf("closed: got %q, want %q", r.ToolResult, want)
	}
}

// A Config's FetchAllowedHosts are checked when the pool is built.
func TestFetchAllowedHostsChecked(t *testing.T) {
	m, err := config.Parse("a.yaml", []byte("agents:\n  a: {model: test, tools: [fetch]}\n  b: {model: test, tools: [plan]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := pool.FromManifest(m, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Agents[0].FetchAllowedHosts = []string{"localhost", "10.0.0.1:80"}
	cfg.Agents[1].FetchAllowedHosts = []string{"localhost"}
	_, err = pool.Build(cfg, pool.Options{})
	for _, want := range []string{
		`agent "a": FetchAllowedHosts[1]: "10.0.0.1:80" is not a host name`,
		`agent "b": FetchAllowedHosts: set, but the agent has no fetch toolset (Builtin)`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("want %q in %v", want, err)
		}
	}
}
