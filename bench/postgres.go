package bench

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/session/postgres"
)

// The PostgreSQL store of package session/postgres, with its default
// options.
func init() {
	OpenPostgres = func(url, schema string) (session.Store, error) {
		return OpenPostgresObserved(url, schema, nil)
	}
	OpenPostgresObserved = func(url, schema string, commit func(time.Duration)) (session.Store, error) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		return postgres.Open(ctx, url, postgres.Options{Schema: schema, CommitLatency: commit})
	}
	SamplePostgresWaits = samplePostgresWaits
}

// samplePostgresWaits samples pg_stat_activity every interval on a
// connection of its own until ctx ends: of the backends of the database
// named app (application_name) that run a statement, how many wait
// on a lock (wait_event_type Lock: a row, a transaction id, an advisory
// lock; LWLock: the server's internal locks) at each sample. It also reads
// the database's deadlock count before and after (database-wide).
func samplePostgresWaits(ctx context.Context, url, app string, interval time.Duration) (PGWaits, error) {
	var w PGWaits
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return w, err
	}
	defer conn.Close(context.Background())
	deadlocks := func(c context.Context) (int64, error) {
		var n int64
		err := conn.QueryRow(c, `SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()`).Scan(&n)
		return n, err
	}
	d0, err := deadlocks(ctx)
	if err != nil {
		return w, err
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			c, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			d1, err := deadlocks(c)
			w.Deadlocks = d1 - d0
			return w, err
		case <-t.C:
		}
		var active, lock, lw int64
		err := conn.QueryRow(ctx, `SELECT count(*),
		        count(*) FILTER (WHERE wait_event_type = 'Lock'),
		        count(*) FILTER (WHERE wait_event_type = 'LWLock')
		    FROM pg_stat_activity
		    WHERE datname = current_database() AND application_name = $1 AND state = 'active'`, app).Scan(&active, &lock, &lw)
		if err != nil {
			if ctx.Err() != nil {
				continue // the sampling ended during the query
			}
			return w, err
		}
		w.Samples++
		w.Active += active
		w.Lock += lock
		w.LWLock += lw
	}
}
