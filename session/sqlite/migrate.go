package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"fmt"

	"github.com/agentpool/agentpool/session/internal/migration"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// migrations returns the embedded steps in order (files NNNN_name.sql,
// numbered 1, 2, ... without gaps).
func migrations() []migration.Step { return migration.Load(migrationFS, "migrations", "sqlite") }

// SchemaVersion is the schema version this code writes.
func SchemaVersion() int { return len(migrations()) }

// migrate brings db up to the last step, one transaction per step. Two
// processes opening the same old database at once are safe: the version
// is read again inside each step's (immediate) transaction.
func migrate(ctx context.Context, db *sql.DB, steps []migration.Step) error {
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	for {
		v, err := userVersion(ctx, conn)
		if err != nil {
			return err
		}
		if v > len(steps) {
			return fmt.Errorf("database schema version %d is newer than this program supports (%d)", v, len(steps))
		}
		if v == len(steps) {
			return nil
		}
		tx, err := conn.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		var cur int
		if err := tx.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&cur); err != nil {
			tx.Rollback()
			return err
		}
		if cur != v {
			tx.Rollback()
			continue // another process migrated meanwhile
		}
		step := steps[v]
		if _, err := tx.ExecContext(ctx, step.SQL); err != nil {
			tx.Rollback()
			return fmt.Errorf("migration %s: %w", step.Name, err)
		}
		if _, err := tx.ExecContext(ctx, fmt.Sprintf(`PRAGMA user_version = %d`, step.Version)); err != nil {
			tx.Rollback()
			return fmt.Errorf("migration %s: %w", step.Name, err)
		}
		if err := tx.Commit(); err != nil {
			return fmt.Errorf("migration %s: %w", step.Name, err)
		}
	}
}

func userVersion(ctx context.Context, conn *sql.Conn) (int, error) {
	var v int
	err := conn.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&v)
	return v, err
}
