package postgres

import (
	"context"
	"embed"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentpool/agentpool/session/internal/migration"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// migrations returns the embedded steps in order (files NNNN_name.sql,
// numbered 1, 2, ... without gaps).
func migrations() []migration.Step { return migration.Load(migrationFS, "migrations", "postgres") }

// SchemaVersion is the schema version this code writes.
func SchemaVersion() int { return len(migrations()) }

// migrate creates the schema when missing and applies the steps it lacks,
// all in one transaction that first takes a transaction-level advisory
// lock named after the schema: processes that open one database at once
// take turns, and the second finds the work done. DDL is transactional in
// PostgreSQL, so a failed step leaves the schema as it was.
func migrate(ctx context.Context, pool *pgxpool.Pool, schema string, steps []migration.Step) error {
	tx, err := pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('agentpool migrate ' || $1::text))`, schema); err != nil {
		return err
	}
	q := pgx.Identifier{schema}.Sanitize()
	if _, err := tx.Exec(ctx, `CREATE SCHEMA IF NOT EXISTS `+q); err != nil {
		return fmt.Errorf("create schema %s: %w", schema, err)
	}
	if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+q+`.schema_migrations (
		version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		return err
	}
	var v int
	if err := tx.QueryRow(ctx, `SELECT COALESCE(max(version), 0) FROM `+q+`.schema_migrations`).Scan(&v); err != nil {
		return err
	}
	if v > len(steps) {
		return fmt.Errorf("database schema %s is at version %d, newer than this program supports (%d)", schema, v, len(steps))
	}
	if v == len(steps) {
		return nil
	}
	// The steps name their tables without a schema: they land in schema.
	if _, err := tx.Exec(ctx, `SELECT set_config('search_path', $1, true)`, q); err != nil {
		return err
	}
	for _, step := range steps[v:] {
		if _, err := tx.Exec(ctx, step.SQL); err != nil {
			return fmt.Errorf("migration %s: %w", step.Name, err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version, name) VALUES ($1, $2)`, step.Version, step.Name); err != nil {
			return fmt.Errorf("migration %s: %w", step.Name, err)
		}
	}
	return tx.Commit(ctx)
}
