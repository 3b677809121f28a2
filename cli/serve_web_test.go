package cli

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// approvalManifest: the lead hands the job to a team whose writer (a
// grandchild of the run) calls Write, which asks by default.
const approvalManifest = `
default_agent: lead
agents:
  lead:
    model:
      type: scripted
      turns:
        - tool_calls: [{name: task, args: {agent_or_team: desk, prompt: Write notes.md.}}]
        - "lead done"
    tools: [subagent]
  writer:
    tools: [file_access]
    model:
      type: test
      call_tools: [Write]
      tool_args: {Write: {file_path: notes.md, content: "approved\n"}}
teams:
  desk: {mode: sequential, members: [writer]}
`

// webEvent is one /event frame as the web view reads it.
type webEvent struct {
	Type       string          `json:"type"`
	Properties json.RawMessage `json:"properties"`
}

// TestServeWebApprovals: `serve web` is a front end of the approval
// broker: a grandchild's Write waits (listed by GET /permission and sent
// as permission.asked on the root's child, metadata.sessionID naming the
// grandchild) instead of being refused, and the page's "Allow once" (POST
// /permission/{id}/reply) lets the write happen; a second answer is 404.
func TestServeWebApprovals(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "agentpool.yaml"), []byte(approvalManifest), 0o644); err != nil {
		t.Fatal(err)
	}
	base := "http://" + startHTTPServerIn(t, dir, "web", "-c", "agentpool.yaml")
	events := webEvents(t, base)
	call := func(method, path, body string, want int) []byte {
		t.Helper()
		req, err := http.NewRequest(method, base+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		if res.StatusCode != want {
			t.Fatalf("%s %s: %d %s, want %d", method, path, res.StatusCode, b, want)
		}
		return b
	}
	var root struct{ ID string }
	if err := json.Unmarshal(call("POST", "/session", `{}`, 200), &root); err != nil || root.ID == "" {
		t.Fatalf("create session: %v", err)
	}
	call("POST", "/session/"+root.ID+"/prompt_async", `{"agent":"lead","parts":[{"type":"text","text":"go"}]}`, 204)

	type request struct {
		ID, SessionID, Permission string
		Metadata                  map[string]any
	}
	var asked request
	until(t, events, func(e webEvent) bool {
		if rootIdle(e, root.ID) {
			t.Fatal("the run ended without asking: the Write was not put to the web view")
		}
		if e.Type != "permission.asked" {
			return false
		}
		if err := json.Unmarshal(e.Properties, &asked); err != nil {
			t.Fatal(err)
		}
		return true
	})
	real, _ := asked.Metadata["sessionID"].(string)
	if asked.Permission != "edit" || asked.Metadata["agent"] != "writer" || real == "" || real == asked.SessionID {
		t.Fatalf("permission.asked: %+v (want an edit of agent writer, metadata.sessionID naming the grandchild)", asked)
	}
	if _, err := os.Stat(filepath.Join(dir, "notes.md")); !os.IsNotExist(err) {
		t.Fatalf("notes.md before the answer: %v", err)
	}
	var list []request
	if err := json.Unmarshal(call("GET", "/permission", "", 200), &list); err != nil || len(list) != 1 || list[0].ID != asked.ID {
		t.Fatalf("GET /permission: %+v %v", list, err)
	}

	if got := string(call("POST", "/permission/"+asked.ID+"/reply", `{"reply":"once"}`, 200)); got != "true" {
		t.Fatalf("reply: %s", got)
	}
	if got := string(call("POST", "/permission/"+asked.ID+"/reply", `{"reply":"reject"}`, 404)); !strings.Contains(got, "PermissionNotFoundError") {
		t.Fatalf("second reply: %s", got)
	}
	until(t, events, func(e webEvent) bool { return rootIdle(e, root.ID) })
	if b, err := os.ReadFile(filepath.Join(dir, "notes.md")); err != nil || string(b) != "approved\n" {
		t.Fatalf("notes.md after allowing: %q %v", b, err)
	}
	if got := string(call("GET", "/permission", "", 200)); got != "[]" {
		t.Fatalf("GET /permission after the answer: %s", got)
	}
}

// rootIdle reports whether e is session.idle of session id.
func rootIdle(e webEvent, id string) bool {
	var p struct{ SessionID string }
	return e.Type == "session.idle" && json.Unmarshal(e.Properties, &p) == nil && p.SessionID == id
}

// webEvents follows base's /event stream until the test ends.
func webEvents(t *testing.T, base string) <-chan webEvent {
	t.Helper()
	res, err := http.Get(base + "/event")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { res.Body.Close() })
	out := make(chan webEvent, 4096)
	go func() {
		defer close(out)
		sc := bufio.NewScanner(res.Body)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok {
				continue
			}
			var e webEvent
			if json.Unmarshal([]byte(data), &e) == nil {
				out <- e
			}
		}
	}()
	return out
}

// until reads events until match accepts one; the stream's end fails the
// test (so does go test's own timeout).
func until(t *testing.T, events <-chan webEvent, match func(webEvent) bool) {
	t.Helper()
	var seen []string
	for e := range events {
		if match(e) {
			return
		}
		seen = append(seen, e.Type)
	}
	t.Fatalf("/event ended before the awaited event; saw %v", seen)
}
