package checkpoint_test

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentpool/agentpool/checkpoint"
	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/internal/pgtest"
	"github.com/agentpool/agentpool/model"
	"github.com/agentpool/agentpool/pool"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/session/memory"
	"github.com/agentpool/agentpool/session/postgres"
	"github.com/agentpool/agentpool/session/sqlite"
)

// threeLevels: lead → mid → leaf, each changing files of the workspace:
// the lead overwrites a.txt, then delegates; mid edits c.txt, then
// delegates; leaf creates b.txt and d/e.txt.
const threeLevels = `
default_agent: lead
agents:
  lead:
    tools: [subagent, file_access]
    model:
      type: scripted
      turns:
        - tool_calls: [{name: Read, args: {file_path: a.txt}}]
        - tool_calls: [{name: Write, args: {file_path: a.txt, content: "lead v1\n"}}]
        - tool_calls: [{name: task, args: {agent_or_team: mid, prompt: Go on.}}]
        - "lead done"
  mid:
    tools: [subagent, file_access]
    model:
      type: scripted
      turns:
        - tool_calls: [{name: Read, args: {file_path: c.txt}}]
        - tool_calls: [{name: Edit, args: {file_path: c.txt, old_string: gamma, new_string: GAMMA}}]
        - tool_calls: [{name: Edit, args: {file_path: c.txt, old_string: GAMMA, new_string: delta}}]
        - tool_calls: [{name: task, args: {agent_or_team: leaf, prompt: Finish.}}]
        - "mid done"
  leaf:
    tools: [file_access]
    model:
      type: scripted
      turns:
        - tool_calls: [{name: Write, args: {file_path: b.txt, content: "made by leaf\n"}}]
        - tool_calls: [{name: Write, args: {file_path: d/e.txt, content: "nested\n"}}]
        - "leaf done"
`

// The workspace before the run: bytes a text column or a careless copy
// would not keep (CR LF, invalid UTF-8, no final newline), and modes.
var (
	origA = []byte("line one\r\nline two  \xff\xfe\n\tend")
	origC = []byte("alpha\nbeta\ngamma\n")
)

type stores map[string]func(t *testing.T) session.Store

var allStores = stores{
	"memory": func(*testing.T) session.Store { return memory.New() },
	"sqlite": func(t *testing.T) session.Store {
		st, err := sqlite.Open(filepath.Join(t.TempDir(), "db.sqlite"), sqlite.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return st
	},
	// PostgreSQL when AGENTPOOL_TEST_POSTGRES names a server (make test-go).
	"postgres": func(t *testing.T) session.Store {
		name, _ := pgtest.Schema(t)
		st, err := postgres.Open(context.Background(), pgtest.URL(t), postgres.Options{Schema: name})
		if err != nil {
			t.Fatal(err)
		}
		return st
	},
}

func newPool(t *testing.T, manifest string, st session.Store, ws string) *pool.Pool {
	t.Helper()
	m, err := config.Parse("agentpool.yaml", []byte(manifest))
	if err != nil {
		t.Fatal(err)
	}
	p, err := pool.New(m, pool.Options{Store: st, Workspace: ws})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// runThreeLevels runs threeLevels in a fresh workspace and returns it,
// the root session and the sessions by agent.
func runThreeLevels(t *testing.T, st session.Store) (ws, root string, byAgent map[string]session.Session) {
	t.Helper()
	ws = t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "a.txt"), origA, 0o640); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "c.txt"), origC, 0o600); err != nil {
		t.Fatal(err)
	}
	p := newPool(t, threeLevels, st, ws)
	res, err := p.RunSink(context.Background(), pool.RunRequest{Prompt: "go"}, nil)
	if err != nil || res.Result.Output != "lead done" {
		t.Fatalf("run: %+v, %v", res, err)
	}
	ctx := context.Background()
	all, err := session.Subtree(ctx, st, res.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	byAgent = map[string]session.Session{}
	for _, s := range all {
		byAgent[s.AgentName] = s
	}
	if len(byAgent) != 3 {
		t.Fatalf("sessions: %+v", all)
	}
	expectFile(t, ws, "a.txt", []byte("lead v1\n"), 0o640)
	expectFile(t, ws, "c.txt", []byte("alpha\nbeta\ndelta\n"), 0o600)
	expectFile(t, ws, "b.txt", []byte("made by leaf\n"), 0o644)
	expectFile(t, ws, "d/e.txt", []byte("nested\n"), 0o644)
	return ws, res.SessionID, byAgent
}

func expectFile(t *testing.T, ws, rel string, want []byte, mode fs.FileMode) {
	t.Helper()
	path := filepath.Join(ws, filepath.FromSlash(rel))
	got, err := os.ReadFile(path)
	if want == nil {
		if !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s exists (%q, %v), want it removed", rel, got, err)
		}
		return
	}
	if err != nil || !bytes.Equal(got, want) {
		t.Errorf("%s = %q (%v), want %q", rel, got, err, want)
		return
	}
	info, err := os.Stat(path)
	if err != nil || info.Mode().Perm() != mode {
		t.Errorf("%s: mode %v (%v), want %v", rel, info.Mode().Perm(), err, mode)
	}
}

// messageWithCall is the id of the message of msgs that calls tool.
func messageWithCall(t *testing.T, msgs []session.Message, tool string) string {
	t.Helper()
	for _, m := range msgs {
		for _, p := range m.Parts {
			if p.Kind == model.PartToolCall && p.ToolName == tool {
				return m.ID
			}
		}
	}
	t.Fatalf("no message calls %s", tool)
	return ""
}

func messages(t *testing.T, st session.Store, sid string) []session.Message {
	t.Helper()
	msgs, err := st.Messages(context.Background(), sid)
	if err != nil {
		t.Fatal(err)
	}
	return msgs
}

// A run three levels deep that changed files is rewound: to the lead's
// delegation, what mid and leaf did is undone and the lead's own earlier
// write stays; to the first message, every file is back byte for byte
// (mode included, created files removed) and the conversation is cut,
// the original kept in a fork.
func TestRewindThreeLevels(t *testing.T) {
	for name, open := range allStores {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			st := open(t)
			defer st.Close()
			ws, root, byAgent := runThreeLevels(t, st)
			before := messages(t, st, root)

			// Back to the lead's delegation: the files the subtree changed.
			res, err := checkpoint.Rewind(ctx, st, root, messageWithCall(t, before, "task"), checkpoint.Code)
			if err != nil {
				t.Fatalf("rewind: %+v, %v", res, err)
			}
			if len(res.Files) != 3 || res.Fork != "" || res.Removed != 0 {
				t.Fatalf("rewind to the delegation: %+v", res)
			}
			expectFile(t, ws, "a.txt", []byte("lead v1\n"), 0o640) // changed before it
			expectFile(t, ws, "c.txt", origC, 0o600)               // mid's two edits, undone
			expectFile(t, ws, "b.txt", nil, 0)
			expectFile(t, ws, "d/e.txt", nil, 0)
			if got := messages(t, st, root); len(got) != len(before) {
				t.Fatalf("a code rewind changed the conversation: %d messages, want %d", len(got), len(before))
			}

			// Back to the start, both.
			res, err = checkpoint.Rewind(ctx, st, root, before[0].ID, checkpoint.Both)
			if err != nil {
				t.Fatalf("rewind: %+v, %v", res, err)
			}
			expectFile(t, ws, "a.txt", origA, 0o640)
			expectFile(t, ws, "c.txt", origC, 0o600)
			if res.Removed != len(before) || res.Fork == "" {
				t.Fatalf("rewind to the first message: %+v", res)
			}
			if got := messages(t, st, root); len(got) != 0 {
				t.Fatalf("%d messages left, want none", len(got))
			}
			kept := messages(t, st, res.Fork)
			if len(kept) != len(before) {
				t.Fatalf("the fork keeps %d messages, want %d", len(kept), len(before))
			}
			for i := range kept {
				if kept[i].Text() != before[i].Text() || kept[i].Role != before[i].Role {
					t.Errorf("fork message %d = %+v, want %+v", i, kept[i], before[i])
				}
			}
			fork, err := st.GetSession(ctx, res.Fork)
			if err != nil {
				t.Fatal(err)
			}
			if from, _ := fork.Metadata[checkpoint.MetaFork].(map[string]any); from["from"] != root || from["reason"] != "rewind" {
				t.Errorf("fork lineage: %+v", fork.Metadata)
			}
			rs, _ := st.GetSession(ctx, root)
			if list, _ := rs.Metadata[checkpoint.MetaRewind].([]any); len(list) != 2 {
				t.Errorf("rewinds recorded: %+v", rs.Metadata)
			}
			// The children are still there, unchanged.
			if _, err := st.GetSession(ctx, byAgent["leaf"].ID); err != nil {
				t.Errorf("leaf session: %v", err)
			}

			// Undo takes the rewinds back, the last first.
			u, err := checkpoint.Undo(ctx, st, root)
			if err != nil || u.PutBack != len(before) || u.Fork != res.Fork {
				t.Fatalf("undo of the second rewind: %+v, %v", u, err)
			}
			expectFile(t, ws, "a.txt", []byte("lead v1\n"), 0o640)
			expectFile(t, ws, "c.txt", origC, 0o600)
			expectFile(t, ws, "b.txt", nil, 0)
			if got := messages(t, st, root); len(got) != len(before) || got[len(got)-1].Text() != "lead done" {
				t.Fatalf("%d messages after the undo, want %d", len(got), len(before))
			}
			if u, err = checkpoint.Undo(ctx, st, root); err != nil || u.PutBack != 0 || len(u.Files) != 3 {
				t.Fatalf("undo of the first rewind: %+v, %v", u, err)
			}
			expectFile(t, ws, "a.txt", []byte("lead v1\n"), 0o640)
			expectFile(t, ws, "c.txt", []byte("alpha\nbeta\ndelta\n"), 0o600)
			expectFile(t, ws, "b.txt", []byte("made by leaf\n"), 0o644)
			expectFile(t, ws, "d/e.txt", []byte("nested\n"), 0o644)
			if _, err := checkpoint.Undo(ctx, st, root); err == nil {
				t.Fatal("a third undo of two rewinds succeeded")
			}

			if _, err := checkpoint.Rewind(ctx, st, root, "msg_none", checkpoint.Code); !errors.Is(err, session.ErrNotFound) {
				t.Errorf("rewind to an unknown message = %v, want ErrNotFound", err)
			}
		})
	}
}

// midManifest goes on with a forked mid session.
const midManifest = `
default_agent: mid
agents:
  mid:
    tools: [file_access]
    model:
      type: scripted
      turns:
        - tool_calls: [{name: Write, args: {file_path: fork.txt, content: "from the fork\n"}}]
        - "the fork went on"
`

// A child session forked at a message becomes a root of its own that goes
// on with a run of its own; the original child is unchanged.
func TestForkChildContinues(t *testing.T) {
	for name, open := range allStores {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			st := open(t)
			defer st.Close()
			ws, _, byAgent := runThreeLevels(t, st)
			mid := byAgent["mid"]
			orig := messages(t, st, mid.ID)
			at := messageWithCall(t, orig, "task") // before mid's delegation
			f, err := checkpoint.Fork(ctx, st, mid.ID, at)
			if err != nil {
				t.Fatal(err)
			}
			if f.ParentID != "" || f.AgentName != "mid" || f.Status != session.StatusIdle {
				t.Fatalf("fork: %+v", f)
			}
			if from, _ := f.Metadata[checkpoint.MetaFork].(map[string]any); from["from"] != mid.ID || from["at"] != at {
				t.Fatalf("fork lineage: %+v", f.Metadata)
			}
			copied := messages(t, st, f.ID)
			if len(copied) >= len(orig) || len(copied) == 0 {
				t.Fatalf("the fork has %d of %d messages", len(copied), len(orig))
			}

			p := newPool(t, midManifest, st, ws)
			res, err := p.RunSink(ctx, pool.RunRequest{Node: "mid", SessionID: f.ID, Prompt: "and now?"}, nil)
			if err != nil || res.Result.Output != "the fork went on" || res.SessionID != f.ID {
				t.Fatalf("the fork's run: %+v, %v", res, err)
			}
			expectFile(t, ws, "fork.txt", []byte("from the fork\n"), 0o644)
			after := messages(t, st, f.ID)
			if len(after) != len(copied)+4 { // prompt, call, result, answer
				t.Fatalf("the fork has %d messages after its run, want %d", len(after), len(copied)+4)
			}
			if got := messages(t, st, mid.ID); len(got) != len(orig) {
				t.Fatalf("the original has %d messages, want %d", len(got), len(orig))
			}
			if s, err := st.GetSession(ctx, mid.ID); err != nil || s.Status != mid.Status || s.ParentID != mid.ParentID {
				t.Fatalf("the original: %+v, %v", s, err)
			}
			// The fork's own checkpoint: rewinding it removes fork.txt
			// and leaves mid's earlier edit (copied with its capture).
			res2, err := checkpoint.Rewind(ctx, st, f.ID, after[len(copied)].ID, checkpoint.Code)
			if err != nil || len(res2.Files) != 1 {
				t.Fatalf("rewind of the fork: %+v, %v", res2, err)
			}
			expectFile(t, ws, "fork.txt", nil, 0)
			// To its start: c.txt back; fork.txt, gone already, is not
			// listed (nothing to undo).
			res3, err := checkpoint.Rewind(ctx, st, f.ID, copied[0].ID, checkpoint.Code)
			if err != nil || len(res3.Files) != 1 || res3.Files[0].Path != "c.txt" {
				t.Fatalf("rewind of the fork to its start: %+v, %v", res3, err)
			}
			expectFile(t, ws, "c.txt", origC, 0o600)
		})
	}
}
