// Checkpoints: copying the WAL's pages into the database file.

package sqlite

import "time"

// checkpointEvery is how often the checkpointer looks for new commits.
const checkpointEvery = 250 * time.Millisecond

// checkpointer checkpoints the WAL (PRAGMA wal_checkpoint(PASSIVE)) after
// commits, until stop is closed. By default SQLite checkpoints in the
// connection whose commit takes the WAL past 1,000 pages, inside that
// commit: the caller whose write crossed the line then waited for the copy
// and two fsyncs (every ~20 delegated calls, tens of milliseconds on a
// busy disk). The store's connections have wal_autocheckpoint=0 and this
// goroutine does the work beside the writes instead. A passive checkpoint
// neither waits for nor blocks the writer; a commit is durable (against
// the process dying) once it is in the WAL, checkpointed or not, so this
// changes when pages move, not what a commit guarantees.
func (s *Store) checkpointer(stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	t := time.NewTicker(checkpointEvery)
	defer t.Stop()
	var last uint64
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		n := s.commits.Load()
		if n == last {
			continue
		}
		last = n
		if _, err := s.db.Exec(`PRAGMA wal_checkpoint(PASSIVE)`); err != nil {
			s.log.Warn("session store: checkpoint", "db", s.path, "err", err)
		}
	}
}
