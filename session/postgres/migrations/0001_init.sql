-- v1: sessions, conversation messages, the per-session event logs, the
-- store-wide event counter, and the open stores with their claims.
-- Times are Unix nanoseconds (0 = unset), as in the SQLite store, so that
-- they round-trip exactly. JSON columns are of type json (kept as written,
-- so a value reads back byte for byte), queryable with ->, ->>.

-- pk is the compact key messages and events refer to (never reused).
CREATE TABLE sessions (
    pk          bigserial PRIMARY KEY,
    id          text NOT NULL UNIQUE,
    parent_id   text REFERENCES sessions(id) ON DELETE CASCADE,
    depth       integer NOT NULL DEFAULT 0,
    agent_name  text NOT NULL DEFAULT '',
    source_type text NOT NULL DEFAULT '',
    title       text NOT NULL DEFAULT '',
    status      text NOT NULL DEFAULT '',
    stop_reason text NOT NULL DEFAULT '',
    created_at  bigint NOT NULL,
    updated_at  bigint NOT NULL,
    usage       json NOT NULL DEFAULT '{}',
    cost        double precision NOT NULL DEFAULT 0,
    total_usage json NOT NULL DEFAULT '{}',
    total_cost  double precision NOT NULL DEFAULT 0,
    duration_ms bigint NOT NULL DEFAULT 0,
    metadata    json,
    owner       text
);
CREATE INDEX sessions_parent ON sessions(parent_id);
CREATE INDEX sessions_created ON sessions(created_at DESC, id);

-- parts is the message's parts as a JSON array (model.Part).
CREATE TABLE messages (
    pk         bigserial PRIMARY KEY,
    id         text NOT NULL,
    session_pk bigint NOT NULL REFERENCES sessions(pk) ON DELETE CASCADE,
    agent_name text NOT NULL DEFAULT '',
    role       text NOT NULL,
    synthetic  boolean NOT NULL DEFAULT false,
    created_at bigint NOT NULL,
    parts      json NOT NULL DEFAULT '[]'
);
CREATE INDEX messages_session ON messages(session_pk, pk);

-- gseq is the store-wide order (Record.GlobalSeq), handed out by
-- event_counter under its row lock, so that it is also the commit order;
-- seq the order inside a session (1, 2, ...). time is Unix ns.
CREATE TABLE events (
    gseq       bigint PRIMARY KEY,
    session_pk bigint NOT NULL REFERENCES sessions(pk) ON DELETE CASCADE,
    seq        bigint NOT NULL,
    time       bigint NOT NULL,
    kind       text NOT NULL,
    data       json NOT NULL,
    UNIQUE (session_pk, seq)
);

-- One row: the last gseq handed out.
CREATE TABLE event_counter (
    one  boolean PRIMARY KEY DEFAULT true CHECK (one),
    last bigint NOT NULL
);
INSERT INTO event_counter (last) VALUES (0);

-- An open store: it holds the session-level advisory lock
-- (lock_class, lock_key) on a connection of its own for as long as it is
-- open; the lock, not the row, says it is alive.
CREATE TABLE instances (
    id         text PRIMARY KEY,
    lock_key   integer NOT NULL,
    pid        integer NOT NULL,
    host       text NOT NULL,
    started_at bigint NOT NULL
);

-- The sessions runs hold (session.Store.Claim). A claim counts while its
-- instance's advisory lock is held.
CREATE TABLE claims (
    session_id text PRIMARY KEY,
    instance   text NOT NULL,
    claimed_at bigint NOT NULL
);
CREATE INDEX claims_instance ON claims(instance);

-- append_events appends events to session logs in one statement (one
-- round trip, committed with the statement's implicit transaction):
-- ids[i], times[i], kinds[i], datas[i] is the i-th event, in order. It
-- locks the event_counter row until the transaction ends, so appends
-- commit one at a time in GlobalSeq order; numbers each session's events
-- on from its last seq; sends one NOTIFY per session on channel, payload
-- "GSEQ SESSION_ID" (GSEQ: the session's last new event); and returns the
-- ids that name no session (their events are not stored).
CREATE FUNCTION append_events(ids text[], times bigint[], kinds text[], datas text[], channel text)
RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE
    base bigint;
    n bigint;
BEGIN
    SELECT c.last INTO base FROM event_counter c FOR UPDATE;
    WITH v AS (
        SELECT * FROM unnest(ids, times, kinds, datas) WITH ORDINALITY AS v(id, t, k, d, o)
    ), s AS (
        SELECT s.id, s.pk, COALESCE((SELECT max(e.seq) FROM events e WHERE e.session_pk = s.pk), 0) AS last_seq
        FROM sessions s WHERE s.id IN (SELECT DISTINCT v.id FROM v)
    ), r AS (
        SELECT s.pk, v.id, v.t, v.k, v.d,
            s.last_seq + row_number() OVER (PARTITION BY v.id ORDER BY v.o) AS seq,
            row_number() OVER (ORDER BY v.o) AS g
        FROM v JOIN s ON s.id = v.id
    ), ins AS (
        INSERT INTO events (gseq, session_pk, seq, time, kind, data)
        SELECT base + r.g, r.pk, r.seq, r.t, r.k, r.d::json FROM r
        RETURNING gseq, session_pk
    ), notes AS (
        SELECT pg_notify(channel, max(ins.gseq) || ' ' || s.id) FROM ins JOIN sessions s ON s.pk = ins.session_pk GROUP BY s.id
    )
    SELECT count(*) INTO n FROM notes;
    SELECT count(*) INTO n FROM events e WHERE e.gseq > base;
    UPDATE event_counter SET last = base + n;
    RETURN QUERY SELECT DISTINCT u.id FROM unnest(ids) AS u(id) WHERE NOT EXISTS (SELECT 1 FROM sessions s WHERE s.id = u.id);
END
$$;
