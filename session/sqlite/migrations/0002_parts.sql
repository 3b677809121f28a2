-- v2: message parts get a table of their own (one row per part, in order),
-- moved out of the JSON array of v1.
CREATE TABLE parts (
    message_seq  INTEGER NOT NULL REFERENCES messages(seq) ON DELETE CASCADE,
    idx          INTEGER NOT NULL,
    kind         TEXT NOT NULL,
    text         TEXT NOT NULL DEFAULT '',
    tool_call_id TEXT NOT NULL DEFAULT '',
    tool_name    TEXT NOT NULL DEFAULT '',
    args         TEXT,
    is_error     INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (message_seq, idx)
) WITHOUT ROWID;

INSERT INTO parts (message_seq, idx, kind, text, tool_call_id, tool_name, args, is_error)
SELECT m.seq, CAST(j.key AS INTEGER),
       COALESCE(j.value ->> '$.kind', ''),
       COALESCE(j.value ->> '$.text', ''),
       COALESCE(j.value ->> '$.tool_call_id', ''),
       COALESCE(j.value ->> '$.tool_name', ''),
       j.value -> '$.args',
       COALESCE(j.value ->> '$.is_error', 0)
FROM messages AS m, json_each(m.parts) AS j;

ALTER TABLE messages DROP COLUMN parts;
