package opencode

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/id"
	"github.com/agentpool/agentpool/model"
	"github.com/agentpool/agentpool/pool"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/session/memory"
	"github.com/agentpool/agentpool/session/sqlite"
)

// TestRevertUnrevert: POST /session/{id}/revert at the prompt whose run
// wrote a file restores the file byte for byte and cuts the conversation
// there (GET .../message no longer lists the turn; message.removed and
// session.updated with revert are published); POST .../unrevert puts the
// file and the turn back and clears revert.
func TestRevertUnrevert(t *testing.T) {
	for name, open := range map[string]func(t *testing.T) session.Store{
		"memory": func(*testing.T) session.Store { return memory.New() },
		"sqlite": func(t *testing.T) session.Store {
			st, err := sqlite.Open(filepath.Join(t.TempDir(), "db.sqlite"), sqlite.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			return st
		},
	} {
		t.Run(name, func(t *testing.T) { testRevertUnrevert(t, open(t)) })
	}
}

func testRevertUnrevert(t *testing.T, store session.Store) {
	noLeaks(t)
	ws := t.TempDir()
	orig := []byte("line one\r\nline two  \xff\xfe\n\tend")
	file := filepath.Join(ws, "a.txt")
	if err := os.WriteFile(file, orig, 0o640); err != nil {
		t.Fatal(err)
	}
	m, err := config.Parse("test.yaml", []byte(`
agents:
  solo:
    tools: [file_access, execution]
    tool_approval: {"*": allow}
    model:
      type: scripted
      turns:
        - tool_calls: [{name: Read, args: {file_path: a.txt}}]
        - tool_calls: [{name: Write, args: {file_path: a.txt, content: "written\n"}}]
        - "written"
`))
	if err != nil {
		t.Fatal(err)
	}
	// The first turn is stored before the server starts (a session of an
	// earlier process): the scripted model plays its turns from the start
	// at each prompt, and only the second prompt's run is to write.
	ctx := context.Background()
	now := time.Now()
	sid := id.DescendingAt(id.Session, now)
	if err := store.CreateSession(ctx, session.Session{ID: sid, AgentName: "solo", Status: session.StatusIdle, CreatedAt: now, UpdatedAt: now}); err != nil {
		t.Fatal(err)
	}
	first := []session.Message{
		{ID: id.AscendingAt(id.Message, now), SessionID: sid, CreatedAt: now, Message: model.UserText("first question")},
		{ID: id.AscendingAt(id.Message, now), SessionID: sid, AgentName: "solo", CreatedAt: now,
			Message: model.Message{Role: model.RoleAssistant, Parts: []model.Part{{Kind: model.PartText, Text: "first answer"}}}},
	}
	if err := store.AppendMessages(ctx, sid, first...); err != nil {
		t.Fatal(err)
	}
	p, err := pool.New(m, pool.Options{Store: store, Workspace: ws})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	_, base := newServer(t, p, Options{Directory: ws})
	ev := subscribe(t, base+"/event")
	mustCall(t, 200, "POST", base+"/session/"+sid+"/message", promptBody("change a.txt"))
	if b, _ := os.ReadFile(file); string(b) != "written\n" {
		t.Fatalf("a.txt after the run: %q: %v", b, arr(mustCall(t, 200, "GET", base+"/session/"+sid+"/message", "")))
	}
	msgs := arr(mustCall(t, 200, "GET", base+"/session/"+sid+"/message", ""))
	if len(msgs) < 4 {
		t.Fatalf("%d messages after two prompts", len(msgs))
	}
	prompt := str(get(msgs[2], "info", "id"))
	var cut []string
	for _, m := range msgs[2:] {
		cut = append(cut, str(get(m, "info", "id")))
	}

	for _, bad := range []string{`{}`, `{"messageID":"msg_x","extra":1}`, `[`, `{"messageID":"msg_unknown"}`} {
		if code, v := call(t, "POST", base+"/session/"+sid+"/revert", bad); code != 400 || get(v, "name") != "BadRequest" {
			t.Errorf("revert with %s: %d %v", bad, code, v)
		}
	}
	for _, op := range []string{"revert", "unrevert"} {
		if code, _ := call(t, "POST", base+"/session/ses_unknown00000000000000000000/"+op, `{"messageID":"msg_1"}`); code != 404 {
			t.Errorf("%s of an unknown session: %d", op, code)
		}
	}

	v := mustCall(t, 200, "POST", base+"/session/"+sid+"/revert", `{"messageID":"`+prompt+`"}`)
	mustMatchResponse(t, "post", "/session/{sessionID}/revert", "200", v)
	if get(v, "revert", "messageID") != prompt {
		t.Fatalf("revert answered %v", v)
	}
	if b, _ := os.ReadFile(file); !bytes.Equal(b, orig) {
		t.Fatalf("a.txt after revert: %q, want %q", b, orig)
	}
	if fi, err := os.Stat(file); err != nil || fi.Mode().Perm() != 0o640 {
		t.Errorf("a.txt after revert: %v %v", fi, err)
	}
	after := arr(mustCall(t, 200, "GET", base+"/session/"+sid+"/message", ""))
	if len(after) != 2 || get(arr(get(after[0], "parts"))[0], "text") != "first question" {
		t.Fatalf("messages after revert: %v", after)
	}
	removed := map[any]bool{}
	for _, e := range ev.waitN(func(e map[string]any) bool { return e["type"] == "message.removed" }, len(cut), 10*time.Second) {
		mustMatch(t, "EventMessageRemoved", e)
		removed[get(e, "properties", "messageID")] = true
	}
	for _, id := range cut {
		if !removed[id] {
			t.Errorf("no message.removed for %s", id)
		}
	}
	mustMatch(t, "EventSessionUpdated", ev.wait(func(e map[string]any) bool {
		return e["type"] == "session.updated" && get(e, "properties", "info", "revert", "messageID") == prompt
	}, 10*time.Second))
	if got := mustCall(t, 200, "GET", base+"/session/"+sid, ""); get(got, "revert", "messageID") != prompt {
		t.Errorf("GET session after revert: revert %v", get(got, "revert"))
	}

	v = mustCall(t, 200, "POST", base+"/session/"+sid+"/unrevert", "")
	mustMatchResponse(t, "post", "/session/{sessionID}/unrevert", "200", v)
	if get(v, "revert") != nil {
		t.Errorf("unrevert answered revert %v", get(v, "revert"))
	}
	if b, _ := os.ReadFile(file); string(b) != "written\n" {
		t.Fatalf("a.txt after unrevert: %q", b)
	}
	back := arr(mustCall(t, 200, "GET", base+"/session/"+sid+"/message", ""))
	if len(back) != len(msgs) || get(arr(get(back[2], "parts"))[0], "text") != "change a.txt" {
		t.Fatalf("%d messages after unrevert, want %d: %v", len(back), len(msgs), back)
	}
	ev.wait(func(e map[string]any) bool {
		return e["type"] == "message.updated" && get(e, "properties", "info", "id") == get(back[2], "info", "id")
	}, 10*time.Second)
	ev.wait(func(e map[string]any) bool {
		return e["type"] == "session.updated" && get(e, "properties", "info", "id") == sid && get(e, "properties", "info", "revert") == nil
	}, 10*time.Second)
	if code, v := call(t, "POST", base+"/session/"+sid+"/unrevert", ""); code != 400 {
		t.Errorf("a second unrevert: %d %v", code, v)
	}

	// A prompt after a revert goes on from the reverted point: revert is
	// cleared, and the cut turn cannot be put back over the new one.
	mustCall(t, 200, "POST", base+"/session/"+sid+"/revert", `{"messageID":"`+str(get(back[2], "info", "id"))+`"}`)
	mustCall(t, 200, "POST", base+"/session/"+sid+"/message", promptBody("change it again"))
	if got := mustCall(t, 200, "GET", base+"/session/"+sid, ""); get(got, "revert") != nil {
		t.Errorf("revert after a new prompt: %v", get(got, "revert"))
	}
	if code, v := call(t, "POST", base+"/session/"+sid+"/unrevert", ""); code != 400 || !strings.Contains(str(get(v, "data", "message")), "gone on") {
		t.Errorf("unrevert after a new prompt: %d %v", code, v)
	}
	got := arr(mustCall(t, 200, "GET", base+"/session/"+sid+"/message", ""))
	if len(got) != len(msgs) || get(arr(get(got[2], "parts"))[0], "text") != "change it again" {
		t.Fatalf("messages after the new prompt: %v", got)
	}
	// So does a shell command (the TUI's !cmd).
	mustCall(t, 200, "POST", base+"/session/"+sid+"/revert", `{"messageID":"`+str(get(got[2], "info", "id"))+`"}`)
	mustCall(t, 200, "POST", base+"/session/"+sid+"/shell", `{"agent":"solo","command":"true"}`)
	if got := mustCall(t, 200, "GET", base+"/session/"+sid, ""); get(got, "revert") != nil {
		t.Errorf("revert after a shell command: %v", get(got, "revert"))
	}
}

// TestRevertRunning: a session at work is not reverted nor unreverted (a
// 400 that says it is running); once aborted it can be.
func TestRevertRunning(t *testing.T) {
	noLeaks(t)
	p := newPool(t, `
agents:
  slow:
    model:
      type: scripted
      delay: 50ms
      turns:
        - text: "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen nineteen twenty"
`)
	_, base := newServer(t, p, Options{})
	ev := subscribe(t, base+"/event")
	sid := str(createSession(t, base, "")["id"])
	mustCall(t, 204, "POST", base+"/session/"+sid+"/prompt_async", promptBody("take your time"))
	ev.wait(func(e map[string]any) bool {
		return e["type"] == "message.part.delta" && get(e, "properties", "sessionID") == sid
	}, 10*time.Second)
	msgs := arr(mustCall(t, 200, "GET", base+"/session/"+sid+"/message", ""))
	if len(msgs) == 0 {
		t.Fatal("no message while running")
	}
	first := str(get(msgs[0], "info", "id"))
	for op, body := range map[string]string{"revert": `{"messageID":"` + first + `"}`, "unrevert": ""} {
		code, v := call(t, "POST", base+"/session/"+sid+"/"+op, body)
		if code != 400 || get(v, "name") != "BadRequest" || !strings.Contains(str(get(v, "data", "message")), "running") {
			t.Errorf("%s of a running session: %d %v", op, code, v)
		}
	}
	mustCall(t, 200, "POST", base+"/session/"+sid+"/abort", "")
	ev.wait(isType("session.idle", sid), 10*time.Second)
	v := mustCall(t, 200, "POST", base+"/session/"+sid+"/revert", `{"messageID":"`+first+`"}`)
	if get(v, "revert", "messageID") != first {
		t.Errorf("revert after abort: %v", v)
	}
	if n := len(arr(mustCall(t, 200, "GET", base+"/session/"+sid+"/message", ""))); n != 0 {
		t.Errorf("%d messages after reverting the first", n)
	}
}
