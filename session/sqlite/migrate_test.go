package sqlite_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/model"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/session/sqlite"
)

// schemaV1 is a frozen copy of migrations/0001_init.sql: the database an
// agentpool of schema version 1 wrote.
const schemaV1 = `
CREATE TABLE sessions (
    pk          INTEGER PRIMARY KEY AUTOINCREMENT,
    id          TEXT NOT NULL UNIQUE,
    parent_id   TEXT REFERENCES sessions(id) ON DELETE CASCADE,
    depth       INTEGER NOT NULL DEFAULT 0,
    agent_name  TEXT NOT NULL DEFAULT '',
    source_type TEXT NOT NULL DEFAULT '',
    title       TEXT NOT NULL DEFAULT '',
    status      TEXT NOT NULL DEFAULT '',
    stop_reason TEXT NOT NULL DEFAULT '',
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL,
    usage       TEXT NOT NULL DEFAULT '{}',
    cost        REAL NOT NULL DEFAULT 0,
    total_usage TEXT NOT NULL DEFAULT '{}',
    total_cost  REAL NOT NULL DEFAULT 0,
    duration_ms INTEGER NOT NULL DEFAULT 0,
    metadata    TEXT
);
CREATE INDEX sessions_parent ON sessions(parent_id);
CREATE TABLE messages (
    seq        INTEGER PRIMARY KEY AUTOINCREMENT,
    id         TEXT NOT NULL,
    session_pk INTEGER NOT NULL REFERENCES sessions(pk) ON DELETE CASCADE,
    agent_name TEXT NOT NULL DEFAULT '',
    role       TEXT NOT NULL,
    synthetic  INTEGER NOT NULL DEFAULT 0,
    created_at INTEGER NOT NULL,
    parts      TEXT NOT NULL DEFAULT '[]'
);
CREATE INDEX messages_session ON messages(session_pk, seq);
CREATE TABLE events (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    session_pk INTEGER NOT NULL REFERENCES sessions(pk) ON DELETE CASCADE,
    seq        INTEGER NOT NULL,
    time       INTEGER NOT NULL,
    kind       TEXT NOT NULL,
    data       TEXT NOT NULL,
    UNIQUE (session_pk, seq)
);
PRAGMA user_version = 1;
`

func TestMigrateFromV1(t *testing.T) {
	path := filepath.Join(t.TempDir(), "old.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := db.Exec(q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	exec(schemaV1)
	exec(`INSERT INTO sessions (id, parent_id, depth, agent_name, source_type, title, status, stop_reason, created_at, updated_at, usage, total_usage, metadata)
		VALUES ('ses_root', NULL, 0, 'orchestrator', 'agent', 'old run', 'completed', 'completed', 1000, 2000, '{"input_tokens":5,"output_tokens":6}', '{"input_tokens":50,"output_tokens":60}', '{"k":"v"}')`)
	exec(`INSERT INTO sessions (id, parent_id, depth, agent_name, source_type, title, status, created_at, updated_at)
		VALUES ('ses_kid', 'ses_root', 1, 'worker', 'agent', 'kid', 'running', 1500, 1500)`)
	exec(`INSERT INTO messages (id, session_pk, agent_name, role, synthetic, created_at, parts) VALUES
		('msg_1', 1, 'orchestrator', 'user', 0, 1100, '[{"kind":"text","text":"hello"}]'),
		('msg_2', 1, 'orchestrator', 'assistant', 0, 1200, '[{"kind":"thinking","text":"hm"},{"kind":"tool_call","tool_call_id":"cal_1","tool_name":"task","args":{"agent_or_team":"worker","n":[1,2]}}]'),
		('msg_3', 1, 'orchestrator', 'tool', 0, 1300, '[{"kind":"tool_result","tool_call_id":"cal_1","tool_name":"task","text":"bad","is_error":true}]'),
		('msg_4', 1, 'orchestrator', 'user', 1, 1400, '[]')`)
	start, _ := event.Marshal(event.RunStarted{SessionID: "ses_root", RunID: "run_1", AgentName: "orchestrator"})
	end, _ := event.Marshal(event.PartEnd{Index: 2})
	exec(`INSERT INTO events (session_pk, seq, time, kind, data) VALUES (1, 1, 1100, 'run_started', ?), (2, 1, 1150, 'part_end', ?), (1, 2, 1160, 'part_end', ?)`,
		string(start), string(end), string(end))
	db.Close()

	st, err := sqlite.Open(path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()

	root, err := st.GetSession(ctx, "ses_root")
	if err != nil {
		t.Fatal(err)
	}
	if root.AgentName != "orchestrator" || root.Usage.OutputTokens != 6 || root.TotalUsage.InputTokens != 50 || root.Metadata["k"] != "v" || root.CreatedAt.UnixNano() != 1000 {
		t.Errorf("root after migration: %+v", root)
	}
	// The v1 database had no owners: its running session is interrupted.
	kid, err := st.GetSession(ctx, "ses_kid")
	if err != nil {
		t.Fatal(err)
	}
	if kid.Status != session.StatusInterrupted || kid.ParentID != "ses_root" || kid.Depth != 1 {
		t.Errorf("kid after migration: %+v", kid)
	}
	if rec := st.Recovered(); len(rec) != 1 || rec[0] != "ses_kid" {
		t.Errorf("Recovered = %v", rec)
	}

	msgs, err := st.Messages(ctx, "ses_root")
	if err != nil {
		t.Fatal(err)
	}
	want := []model.Message{
		model.UserText("hello"),
		{Role: model.RoleAssistant, Parts: []model.Part{{Kind: model.PartThinking, Text: "hm"},
			{Kind: model.PartToolCall, ToolCallID: "cal_1", ToolName: "task", Args: json.RawMessage(`{"agent_or_team":"worker","n":[1,2]}`)}}},
		{Role: model.RoleTool, Parts: []model.Part{{Kind: model.PartToolResult, ToolCallID: "cal_1", ToolName: "task", Text: "bad", IsError: true}}},
		{Role: model.RoleUser, Synthetic: true, Parts: []model.Part{}},
	}
	if len(msgs) != len(want) {
		t.Fatalf("%d messages after migration, want %d", len(msgs), len(want))
	}
	for i := range want {
		g, _ := json.Marshal(msgs[i].Message)
		w, _ := json.Marshal(want[i])
		if string(g) != string(w) {
			t.Errorf("message %d:\n got %s\nwant %s", i, g, w)
		}
		if msgs[i].ID != "msg_"+string(rune('1'+i)) || msgs[i].SessionID != "ses_root" {
			t.Errorf("message %d: id %s session %s", i, msgs[i].ID, msgs[i].SessionID)
		}
	}

	recs, err := st.Events(ctx, "ses_root", 0)
	if err != nil || len(recs) != 2 || recs[0].Event.Kind() != event.KindRunStarted || recs[1].Seq != 2 || recs[1].GlobalSeq != 3 {
		t.Fatalf("events after migration: %+v, %v", recs, err)
	}
	// The log goes on where it stopped.
	if err := st.AppendEvents(ctx, "ses_root", event.PartEnd{Index: 9}); err != nil {
		t.Fatal(err)
	}
	recs, _ = st.Events(ctx, "ses_root", 2)
	if len(recs) != 1 || recs[0].Seq != 3 || recs[0].GlobalSeq <= 3 {
		t.Errorf("appended after migration: %+v", recs)
	}
	// Deletion cascades through the migrated tables.
	if err := st.DeleteSession(ctx, "ses_root"); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	db, _ = sql.Open("sqlite", path)
	defer db.Close()
	var v, parts int
	db.QueryRow(`PRAGMA user_version`).Scan(&v)
	db.QueryRow(`SELECT COUNT(*) FROM parts`).Scan(&parts)
	if v != sqlite.SchemaVersion() || parts != 0 {
		t.Errorf("user_version %d (want %d), %d parts left", v, sqlite.SchemaVersion(), parts)
	}
}

func TestNewerSchemaRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "new.db")
	db, _ := sql.Open("sqlite", path)
	if _, err := db.Exec(`PRAGMA user_version = 999`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	_, err := sqlite.Open(path, sqlite.Options{})
	if err == nil || !strings.Contains(err.Error(), "newer") {
		t.Fatalf("Open of a newer schema = %v", err)
	}
}

func TestPragmas(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p.db")
	st, err := sqlite.Open(path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	db, _ := sql.Open("sqlite", path)
	defer db.Close()
	var mode string
	db.QueryRow(`PRAGMA journal_mode`).Scan(&mode)
	if mode != "wal" {
		t.Errorf("journal_mode = %q, want wal", mode)
	}
}

func TestReopenKeepsEverything(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.db")
	ctx := context.Background()
	st, err := sqlite.Open(path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.CreateSession(ctx, session.Session{ID: "ses_1", Status: session.StatusCompleted}); err != nil {
		t.Fatal(err)
	}
	if err := st.CreateSession(ctx, session.Session{ID: "ses_2", ParentID: "ses_1", Depth: 1, Status: session.StatusRunning}); err != nil {
		t.Fatal(err)
	}
	for i := range 1000 {
		if err := st.AppendEvents(ctx, "ses_1", event.PartEnd{Index: i}); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.AppendMessages(ctx, "ses_1", session.Message{ID: "msg_1", Message: model.UserText("hi")}); err != nil {
		t.Fatal(err)
	}
	// A second store on the same file in this (live) process leaves the
	// running session alone.
	st2, err := sqlite.Open(path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(st2.Recovered()) != 0 {
		t.Errorf("a live process's sessions were recovered: %v", st2.Recovered())
	}
	if err := st2.Close(); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil { // Close flushes
		t.Fatal(err)
	}
	st, err = sqlite.Open(path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	// The first store closed with ses_2 still running: nobody runs it now.
	if rec := st.Recovered(); len(rec) != 1 || rec[0] != "ses_2" {
		t.Errorf("Recovered = %v, want [ses_2]", rec)
	}
	recs, err := st.Events(ctx, "ses_1", 0)
	if err != nil || len(recs) != 1000 || recs[999].Seq != 1000 {
		t.Fatalf("after reopen: %d events, %v", len(recs), err)
	}
	msgs, err := st.Messages(ctx, "ses_1")
	if err != nil || len(msgs) != 1 {
		t.Fatalf("after reopen: %d messages, %v", len(msgs), err)
	}
	if err := st.AppendEvents(ctx, "ses_1", event.PartEnd{Index: 1000}); err != nil {
		t.Fatal(err)
	}
	recs, _ = st.Events(ctx, "ses_1", 1000)
	if len(recs) != 1 || recs[0].Seq != 1001 {
		t.Errorf("seq after reopen: %+v", recs)
	}
}

func TestUpdatePanicReachesCaller(t *testing.T) {
	st := openFile(t)
	defer st.Close()
	ctx := context.Background()
	if err := st.CreateSession(ctx, session.Session{ID: "ses_1"}); err != nil {
		t.Fatal(err)
	}
	func() {
		defer func() {
			if r := recover(); r != "boom" {
				t.Errorf("recovered %v, want boom", r)
			}
		}()
		st.UpdateSession(ctx, "ses_1", func(*session.Session) { panic("boom") })
	}()
	// The store still works.
	if err := st.UpdateSession(ctx, "ses_1", func(s *session.Session) { s.Title = "ok" }); err != nil {
		t.Fatal(err)
	}
	if s, _ := st.GetSession(ctx, "ses_1"); s.Title != "ok" {
		t.Errorf("title %q", s.Title)
	}
}
