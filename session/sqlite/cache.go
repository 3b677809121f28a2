// The record cache: session records this store wrote or read in its
// writer's transactions, answered without a read while a transaction is
// open.

package sqlite

import (
	"encoding/json"

	"github.com/agentpool/agentpool/session"
)

// maxRecs bounds the record cache; it is emptied when full.
const maxRecs = 1 << 14

// Why the cache is never stale when it answers: it answers only while the
// writer's transaction is open, which holds the database's write lock, so
// no other connection commits meanwhile; every write of this store to a
// session goes through that transaction and updates or drops its record.
// When a transaction begins, PRAGMA data_version (on the writer's own
// connection) says whether another connection committed since this
// store's last transaction; if one did, the cache is emptied. A failed
// transaction empties it too.

// cachedRecord returns the cached record of id while a transaction is open;
// s.mu is held.
func (s *Store) cachedRecord(id string) (session.Session, bool) {
	if !s.txOpen {
		return session.Session{}, false
	}
	r, ok := s.recs[id]
	if ok {
		r.Metadata = session.CloneMetadata(r.Metadata)
	}
	return r, ok
}

// keep caches rec, as the writer's transaction holds it; s.mu is not held.
func (s *Store) keep(rec session.Session) {
	s.mu.Lock()
	if len(s.recs) >= maxRecs {
		clear(s.recs)
	}
	s.recs[rec.ID] = rec
	s.mu.Unlock()
}

// forget drops the records of ids (nil: all); s.mu is not held.
func (s *Store) forget(ids []string) {
	s.mu.Lock()
	if ids == nil {
		clear(s.recs)
	}
	for _, id := range ids {
		delete(s.recs, id)
	}
	s.mu.Unlock()
}

// stored returns rec as a read of its row would: times in Unix
// nanoseconds, metadata through JSON (meta, its column value: nil or
// the text); nil when meta does not decode.
func stored(rec session.Session, meta any) *session.Session {
	rec.CreatedAt, rec.UpdatedAt = fromUnixNano(unixNano(rec.CreatedAt)), fromUnixNano(unixNano(rec.UpdatedAt))
	rec.Metadata = nil
	if text, _ := meta.(string); text != "" && text != "null" {
		if err := json.Unmarshal([]byte(text), &rec.Metadata); err != nil {
			return nil
		}
	}
	return &rec
}
