package bench

import (
	"context"
	"time"

	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/session/postgres"
)

// The PostgreSQL store of package session/postgres, with its default
// options.
func init() {
	OpenPostgres = func(url, schema string) (session.Store, error) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		return postgres.Open(ctx, url, postgres.Options{Schema: schema})
	}
}
