package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// migration is one step of the schema; applying step i (1-based) takes a
// database from user_version i-1 to i.
type migration struct {
	version int
	name    string
	sql     string
}

// migrations returns the embedded steps in order. The files are named
// NNNN_name.sql with NNNN = 1, 2, ... without gaps.
func migrations() []migration {
	entries, err := fs.ReadDir(migrationFS, "migrations")
	if err != nil {
		panic(err)
	}
	var out []migration
	for _, e := range entries {
		name := e.Name()
		num, _, ok := strings.Cut(name, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil {
			panic("sqlite: bad migration file name " + name)
		}
		b, err := migrationFS.ReadFile(path.Join("migrations", name))
		if err != nil {
			panic(err)
		}
		out = append(out, migration{version: v, name: name, sql: string(b)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].version < out[j].version })
	for i, m := range out {
		if m.version != i+1 {
			panic(fmt.Sprintf("sqlite: migration %s out of sequence (want version %d)", m.name, i+1))
		}
	}
	return out
}

// SchemaVersion is the schema version this code writes.
func SchemaVersion() int { return len(migrations()) }

// migrate brings db up to the last step, one transaction per step. Two
// processes opening the same old database at once are safe: the version
// is read again inside each step's (immediate) transaction.
func migrate(ctx context.Context, db *sql.DB, steps []migration) error {
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
		if _, err := tx.ExecContext(ctx, step.sql); err != nil {
			tx.Rollback()
			return fmt.Errorf("migration %s: %w", step.name, err)
		}
		if _, err := tx.ExecContext(ctx, fmt.Sprintf(`PRAGMA user_version = %d`, step.version)); err != nil {
			tx.Rollback()
			return fmt.Errorf("migration %s: %w", step.name, err)
		}
		if err := tx.Commit(); err != nil {
			return fmt.Errorf("migration %s: %w", step.name, err)
		}
	}
}

func userVersion(ctx context.Context, conn *sql.Conn) (int, error) {
	var v int
	err := conn.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&v)
	return v, err
}
