package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/session"
)

// rewind and fork from the command line: a run changes the workspace,
// `sessions rewind --code` restores it byte for byte, the default (both)
// cuts the conversation into a fork, `sessions tree` shows the lineage,
// and the fork is forked again at a message.
func TestSessionsRewindFork(t *testing.T) {
	t.Parallel() // mostly waits on its CLI processes
	dir := t.TempDir()
	db := filepath.Join(dir, "s.db")
	manifest := filepath.Join(dir, "m.yaml")
	os.WriteFile(manifest, []byte(`
agents:
  coder:
    tools: [file_access]
    model:
      type: scripted
      turns:
        - tool_calls: [{name: Read, args: {file_path: keep.txt}}]
        - tool_calls: [{name: Write, args: {file_path: keep.txt, content: "changed\n"}}]
        - tool_calls: [{name: Write, args: {file_path: sub/new.txt, content: "new\n"}}]
        - "done"
`), 0o644)
	orig := []byte("orig\r\n\xff no newline")
	keep := filepath.Join(dir, "keep.txt")
	if err := os.WriteFile(keep, orig, 0o600); err != nil {
		t.Fatal(err)
	}
	r := runCLI(t, dir, "run", "-c", manifest, "--db", db, "--allow", "Write", "--output", "jsonl", "change the files")
	if r.code != 0 {
		t.Fatalf("run: %d %s", r.code, r.stderr)
	}
	root := decodeJSONL(t, r.stdout)[0].(event.RunStarted).SessionID
	if b, _ := os.ReadFile(keep); string(b) != "changed\n" {
		t.Fatalf("the run left keep.txt %q", b)
	}
	var msgs []session.Message
	if err := json.Unmarshal([]byte(runCLI(t, dir, "sessions", "show", "--db", db, "--json", root).stdout), &msgs); err != nil || len(msgs) != 8 {
		t.Fatalf("show --json: %d messages, %v", len(msgs), err)
	}
	if text := runCLI(t, dir, "sessions", "show", "--db", db, root).stdout; !strings.Contains(text, msgs[0].ID) || !strings.Contains(text, msgs[3].ID) {
		t.Fatalf("show does not print the message ids:\n%s", text)
	}

	// Files only, to before the first Write.
	c := runCLI(t, dir, "sessions", "rewind", "--db", db, root, "--to", msgs[3].ID, "--code")
	if c.code != 0 || !strings.Contains(c.stdout, "restored keep.txt") || !strings.Contains(c.stdout, "removed sub/new.txt") {
		t.Fatalf("rewind --code: %d\n%s%s", c.code, c.stdout, c.stderr)
	}
	if b, err := os.ReadFile(keep); err != nil || !bytes.Equal(b, orig) {
		t.Fatalf("keep.txt after rewind = %q, %v; want %q", b, err, orig)
	}
	if info, _ := os.Stat(keep); info.Mode().Perm() != 0o600 {
		t.Errorf("keep.txt mode %v, want 0600", info.Mode().Perm())
	}
	if _, err := os.Stat(filepath.Join(dir, "sub", "new.txt")); !os.IsNotExist(err) {
		t.Errorf("sub/new.txt still there: %v", err)
	}

	// Both (the default), to the first message: the conversation goes
	// into a fork.
	b := runCLI(t, dir, "sessions", "rewind", "--db", db, root, "--to", msgs[0].ID)
	if b.code != 0 || !strings.Contains(b.stdout, "removed 8 message(s)") {
		t.Fatalf("rewind: %d\n%s%s", b.code, b.stdout, b.stderr)
	}
	if left := runCLI(t, dir, "sessions", "show", "--db", db, "--json", root).stdout; strings.TrimSpace(left) != "[]" {
		t.Fatalf("messages left after the rewind: %s", left)
	}
	var res struct{ Fork string }
	j := runCLI(t, dir, "sessions", "rewind", "--db", db, root, "--to", "msg_nowhere", "--json")
	if j.code == 0 || !strings.Contains(j.stderr, "not in the conversation") {
		t.Fatalf("rewind to an unknown message: %d %s", j.code, j.stderr)
	}
	var forks []session.Session
	json.Unmarshal([]byte(runCLI(t, dir, "sessions", "list", "--db", db, "--roots", "--json").stdout), &forks)
	for _, s := range forks {
		if s.ID != root {
			res.Fork = s.ID
		}
	}
	if res.Fork == "" || !strings.Contains(b.stdout, res.Fork) {
		t.Fatalf("no fork kept the conversation: %+v\n%s", forks, b.stdout)
	}
	tree := runCLI(t, dir, "sessions", "tree", "--db", db, root).stdout
	for _, want := range []string{"rewound to before " + msgs[3].ID + " (code)", "rewound to before " + msgs[0].ID + " (both)", "fork " + res.Fork} {
		if !strings.Contains(tree, want) {
			t.Errorf("tree lacks %q:\n%s", want, tree)
		}
	}

	// Undo the last rewind: the conversation comes back (the files were
	// as they are now: the code rewind before it had restored them).
	u := runCLI(t, dir, "sessions", "rewind", "--db", db, root, "--undo")
	if u.code != 0 || !strings.Contains(u.stdout, "put back 8 message(s)") {
		t.Fatalf("rewind --undo: %d\n%s%s", u.code, u.stdout, u.stderr)
	}
	var back []session.Message
	json.Unmarshal([]byte(runCLI(t, dir, "sessions", "show", "--db", db, "--json", root).stdout), &back)
	if len(back) != 8 || back[0].Text() != "change the files" {
		t.Fatalf("after --undo the session holds %d messages", len(back))
	}
	if n := runCLI(t, dir, "sessions", "rewind", "--db", db, root); n.code == 0 || !strings.Contains(n.stderr, "--to MESSAGE") {
		t.Errorf("rewind with neither --to nor --undo: %d %s", n.code, n.stderr)
	}

	// The fork holds the conversation; fork it again before its third message.
	var kept []session.Message
	json.Unmarshal([]byte(runCLI(t, dir, "sessions", "show", "--db", db, "--json", res.Fork).stdout), &kept)
	if len(kept) != 8 || kept[0].Text() != "change the files" {
		t.Fatalf("the fork holds %d messages: %+v", len(kept), kept)
	}
	at := kept[2].ID
	f := runCLI(t, dir, "sessions", "fork", "--db", db, res.Fork, "--at", at, "--json")
	var second session.Session
	if err := json.Unmarshal([]byte(f.stdout), &second); f.code != 0 || err != nil {
		t.Fatalf("fork: %d %v\n%s%s", f.code, err, f.stdout, f.stderr)
	}
	json.Unmarshal([]byte(runCLI(t, dir, "sessions", "show", "--db", db, "--json", second.ID).stdout), &kept)
	if len(kept) != 2 {
		t.Errorf("the second fork holds %d messages, want 2", len(kept))
	}
	if tree := runCLI(t, dir, "sessions", "tree", "--db", db, second.ID).stdout; !strings.Contains(tree, "forked from "+res.Fork+", before message "+at) {
		t.Errorf("tree of the second fork lacks its origin:\n%s", tree)
	}
	// It goes on from the command line.
	r = runCLI(t, dir, "run", "-c", manifest, "--db", db, "--allow", "Write", "--session", second.ID, "again")
	if r.code != 0 || strings.TrimSpace(r.stdout) != "done" {
		t.Fatalf("run of the fork: %d %q %s", r.code, r.stdout, r.stderr)
	}
}
