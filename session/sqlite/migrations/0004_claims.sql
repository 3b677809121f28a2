-- v4: ownership that does not depend on process ids. An open store holds an
-- exclusive lock on a file of its own next to the database, which the
-- kernel releases when its process dies, whatever the process id and host
-- name are then; heartbeat_at is renewed while the store is open (a lease,
-- for when that file cannot be looked at); boot_id tells a store from
-- before the machine last booted. claims holds the sessions that runs hold
-- (session.Store.Claim): one run at a time in a line of sessions, across
-- processes.
ALTER TABLE instances ADD COLUMN boot_id TEXT NOT NULL DEFAULT '';
ALTER TABLE instances ADD COLUMN heartbeat_at INTEGER NOT NULL DEFAULT 0;
CREATE TABLE claims (
    session_id TEXT PRIMARY KEY,
    instance   TEXT NOT NULL,
    claimed_at INTEGER NOT NULL
);
CREATE INDEX claims_instance ON claims(instance);
