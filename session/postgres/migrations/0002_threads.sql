-- v2: a root session found by its AG-UI thread (session.MetaThread in its
-- metadata, session.ListOptions.Thread) through an index instead of a read
-- of every session: a run on a thread cost time in proportion to the
-- sessions stored. The expression must stay the one ListSessions queries
-- (threadExpr in sessions.go).
CREATE INDEX sessions_thread ON sessions ((metadata ->> 'agui_thread_id'), created_at DESC, id);
