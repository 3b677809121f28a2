-- v3: crash recovery. Every open store registers itself in instances; a
-- session records the instance that last wrote it, so that a later open can
-- tell the running sessions of a dead process (interrupted) from those of a
-- live one.
CREATE TABLE instances (
    id         TEXT PRIMARY KEY,
    pid        INTEGER NOT NULL,
    host       TEXT NOT NULL,
    started_at INTEGER NOT NULL
);
ALTER TABLE sessions ADD COLUMN owner TEXT;
CREATE INDEX sessions_running ON sessions(status) WHERE status = 'running';
CREATE INDEX sessions_created ON sessions(created_at DESC, id);
