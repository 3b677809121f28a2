-- v3: file captures (session.CaptureStore, docs/checkpoints.md): the
-- content of a file before a session's checkpoint changed it, the first
-- capture of a file at each checkpoint. Contents are addressed by their
-- SHA-256 (hex) and kept once; the trigger drops a content with the last
-- capture that holds it, so that deleting a session (whose captures go by
-- ON DELETE CASCADE) collects its contents too.
CREATE TABLE captures (
    seq          bigserial PRIMARY KEY,
    session_pk   bigint NOT NULL REFERENCES sessions(pk) ON DELETE CASCADE,
    checkpoint   text NOT NULL,
    message_id   text NOT NULL DEFAULT '',
    tool_call_id text NOT NULL DEFAULT '',
    root         text NOT NULL,
    path         text NOT NULL,
    hash         text, -- NULL: the file did not exist
    mode         bigint NOT NULL DEFAULT 0,
    created_at   bigint NOT NULL,
    UNIQUE (session_pk, checkpoint, root, path)
);
CREATE INDEX captures_hash ON captures(hash);

CREATE TABLE blobs (
    hash    text PRIMARY KEY,
    content bytea NOT NULL
);

CREATE FUNCTION captures_collect() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM blobs WHERE hash = OLD.hash AND NOT EXISTS (SELECT 1 FROM captures WHERE hash = OLD.hash);
    RETURN NULL;
END;
$$;

CREATE TRIGGER captures_collect AFTER DELETE ON captures
    FOR EACH ROW WHEN (OLD.hash IS NOT NULL) EXECUTE FUNCTION captures_collect();
