package postgres

import "github.com/agentpool/agentpool/session"

// Test hooks.

// SetBeforeReconnect makes the listener call fn after it lost its
// connection and before it makes the next one.
func (s *Store) SetBeforeReconnect(fn func()) {
	s.notify.mu.Lock()
	defer s.notify.mu.Unlock()
	s.notify.beforeReconnect = fn
}

// ListenerPID is the server process of the listening connection.
func (s *Store) ListenerPID() uint32 {
	return s.notify.listenPID.Load()
}

// ListQuery is the query ListSessions sends for opts, with its arguments.
func ListQuery(opts session.ListOptions) (string, []any) { return listQuery(opts) }
