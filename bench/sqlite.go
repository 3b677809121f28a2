package bench

import (
	"time"

	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/session/sqlite"
)

// The SQLite store of package session/sqlite, with its default options
// (batched writer, WAL, synchronous=NORMAL).
func init() {
	OpenSQLite = func(path string) (session.Store, error) { return sqlite.Open(path, sqlite.Options{}) }
	OpenSQLiteObserved = func(path string, commit func(time.Duration)) (session.Store, error) {
		return sqlite.Open(path, sqlite.Options{CommitLatency: commit})
	}
}
