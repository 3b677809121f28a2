-- v1: sessions, conversation messages (parts as one JSON array) and the
-- per-session event log. Times are Unix nanoseconds (0 = unset).
-- pk is the compact key that messages and events refer to; AUTOINCREMENT
-- so that a deleted session's key is never given to another one.
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

-- id is the store-wide order (GlobalSeq); seq the order inside a session.
CREATE TABLE events (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    session_pk INTEGER NOT NULL REFERENCES sessions(pk) ON DELETE CASCADE,
    seq        INTEGER NOT NULL,
    time       INTEGER NOT NULL,
    kind       TEXT NOT NULL,
    data       TEXT NOT NULL,
    UNIQUE (session_pk, seq)
);
