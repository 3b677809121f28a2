-- v6: file captures (session.CaptureStore, docs/checkpoints.md): the
-- content of a file before a session's checkpoint changed it, the first
-- capture of a file at each checkpoint. Contents are addressed by their
-- SHA-256 (hex) and kept once; the trigger drops a content with the last
-- capture that holds it, so that deleting a session (whose captures go by
-- ON DELETE CASCADE) collects its contents too.
CREATE TABLE captures (
    seq          INTEGER PRIMARY KEY AUTOINCREMENT,
    session_pk   INTEGER NOT NULL REFERENCES sessions(pk) ON DELETE CASCADE,
    checkpoint   TEXT NOT NULL,
    message_id   TEXT NOT NULL DEFAULT '',
    tool_call_id TEXT NOT NULL DEFAULT '',
    root         TEXT NOT NULL,
    path         TEXT NOT NULL,
    hash         TEXT, -- NULL: the file did not exist
    mode         INTEGER NOT NULL DEFAULT 0,
    created_at   INTEGER NOT NULL,
    UNIQUE (session_pk, checkpoint, root, path)
);
CREATE INDEX captures_hash ON captures(hash);

CREATE TABLE blobs (
    hash    TEXT PRIMARY KEY,
    content BLOB NOT NULL
);

CREATE TRIGGER captures_collect AFTER DELETE ON captures WHEN old.hash IS NOT NULL
BEGIN
    DELETE FROM blobs WHERE hash = old.hash AND NOT EXISTS (SELECT 1 FROM captures WHERE hash = old.hash);
END;
