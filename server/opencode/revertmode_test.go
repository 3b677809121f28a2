package opencode

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/pool"
	"github.com/agentpool/agentpool/session/memory"
)

// TestRevertMode: POST /session/{id}/revert?mode=code restores the files
// and keeps the conversation (no revert mark); unrevert takes it back;
// ?mode=conversation cuts the conversation and leaves the files; another
// mode is a 400 that changes nothing.
func TestRevertMode(t *testing.T) {
	noLeaks(t)
	ws := t.TempDir()
	orig := []byte("one\r\n\x00\xff two\n")
	file := filepath.Join(ws, "a.txt")
	if err := os.WriteFile(file, orig, 0o600); err != nil {
		t.Fatal(err)
	}
	m, err := config.Parse("test.yaml", []byte(`
agents:
  solo:
    tools: [file_access]
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
	p, err := pool.New(m, pool.Options{Store: memory.New(), Workspace: ws})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	_, base := newServer(t, p, Options{Directory: ws})
	sid := str(get(mustCall(t, 200, "POST", base+"/session", `{}`), "id"))
	mustCall(t, 200, "POST", base+"/session/"+sid+"/message", promptBody("change a.txt"))
	read := func() []byte { b, _ := os.ReadFile(file); return b }
	if string(read()) != "written\n" {
		t.Fatalf("a.txt after the run: %q", read())
	}
	msgs := arr(mustCall(t, 200, "GET", base+"/session/"+sid+"/message", ""))
	first := str(get(msgs[1], "info", "id")) // the first answer: the Read, then the Write
	if code, v := call(t, "POST", base+"/session/"+sid+"/revert?mode=all", `{"messageID":"`+first+`"}`); code != 400 {
		t.Fatalf("mode=all: %d %v", code, v)
	}
	if string(read()) != "written\n" {
		t.Fatalf("a refused revert changed a.txt: %q", read())
	}

	v := mustCall(t, 200, "POST", base+"/session/"+sid+"/revert?mode=code", `{"messageID":"`+first+`"}`)
	if get(v, "revert") != nil {
		t.Errorf("a code revert marks the session reverted: %v", get(v, "revert"))
	}
	if !bytes.Equal(read(), orig) {
		t.Fatalf("a.txt after a code revert: %q, want %q", read(), orig)
	}
	if after := arr(mustCall(t, 200, "GET", base+"/session/"+sid+"/message", "")); len(after) != len(msgs) {
		t.Fatalf("a code revert changed the conversation: %d messages, had %d", len(after), len(msgs))
	}
	mustCall(t, 200, "POST", base+"/session/"+sid+"/unrevert", "")
	if string(read()) != "written\n" {
		t.Fatalf("a.txt after unrevert: %q", read())
	}

	msgs = arr(mustCall(t, 200, "GET", base+"/session/"+sid+"/message", ""))
	first = str(get(msgs[1], "info", "id"))
	v = mustCall(t, 200, "POST", base+"/session/"+sid+"/revert?mode=conversation", `{"messageID":"`+first+`"}`)
	if get(v, "revert", "messageID") != first {
		t.Errorf("a conversation revert: revert %v", get(v, "revert"))
	}
	if string(read()) != "written\n" {
		t.Fatalf("a conversation revert changed a.txt: %q", read())
	}
	if after := arr(mustCall(t, 200, "GET", base+"/session/"+sid+"/message", "")); len(after) != 1 {
		t.Fatalf("after a conversation revert to the first answer: %d messages, want the prompt alone", len(after))
	}
}
