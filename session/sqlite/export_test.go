package sqlite

import "github.com/agentpool/agentpool/session"

// Test hooks.

// ListQuery is the query ListSessions runs for opts, with its arguments.
func ListQuery(opts session.ListOptions) (string, []any) { return listQuery(opts) }
