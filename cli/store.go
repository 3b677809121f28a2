package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/hook"
	"github.com/agentpool/agentpool/hook/command"
	"github.com/agentpool/agentpool/internal/termtext"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/session/memory"
	"github.com/agentpool/agentpool/session/sqlite"
)

// memoryDB is the --db value (or storage.path) that keeps nothing on disk.
const memoryDB = ":memory:"

// errNoPostgres is what a command gets that opens a PostgreSQL database
// in a binary without the PostgreSQL store; Main's exec to agentpool-full
// comes first, so it means a command that lacks its annotation.
var errNoPostgres = errors.New("this agentpool binary has no PostgreSQL store: run agentpool-full")

// openStore opens the session store: --db wins over the manifest's
// storage.path (relative to the manifest's directory) or storage.url, else
// the database in the user's data directory. ":memory:" keeps nothing on
// disk; a postgres:// or postgresql:// URL is a PostgreSQL database, which
// pg opens (nil: errNoPostgres).
func openStore(dbFlag string, m *config.Manifest, pg PostgresOpener) (session.Store, error) {
	path, err := storePath(dbFlag, m)
	if err != nil {
		return nil, err
	}
	if path == memoryDB {
		return memory.New(), nil
	}
	log := slog.New(slog.NewTextHandler(termtext.NewWriter(os.Stderr), &slog.HandlerOptions{Level: slog.LevelWarn}))
	if isPostgresURL(path) {
		if pg == nil {
			return nil, errNoPostgres
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		st, err := pg(ctx, path, log)
		if err != nil {
			return nil, fmt.Errorf("session database: %w", err)
		}
		return command.CleanTranscripts(st, postgresTranscripts(), false), nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("session database: %w", err)
	}
	st, err := sqlite.Open(path, sqlite.Options{Logger: log})
	if err != nil {
		return nil, err
	}
	// Deleting a session deletes its transcripts.
	return command.CleanTranscripts(st, transcriptsDir(path), false), nil
}

// transcriptsDir is where the transcripts of the sessions of the database
// at db are written: the directory transcripts next to it (in the user's
// data directory by default).
func transcriptsDir(db string) string { return filepath.Join(filepath.Dir(db), "transcripts") }

// postgresTranscripts is where the transcripts of the sessions of a
// PostgreSQL database are written: files are per machine, so in the
// user's data directory, as for the default database.
func postgresTranscripts() string {
	db, err := defaultDBPath()
	if err != nil {
		return filepath.Join(os.TempDir(), "agentpool-transcripts")
	}
	return transcriptsDir(db)
}

// testStoreWrapper, when set, wraps the store of every pool: the tests'
// TestMain sets it in a CLI process they start, to make its store fail
// like a full disk (storetest.Faulty). Never set otherwise.
var testStoreWrapper func(session.Store) session.Store

// openPoolStore opens the store of a pool and says where its sessions'
// transcripts go: next to the database, or, for an in-memory store, in a
// temporary directory that closing the store removes.
func openPoolStore(dbFlag string, m *config.Manifest, pg PostgresOpener) (session.Store, string, error) {
	path, err := storePath(dbFlag, m)
	if err != nil {
		return nil, "", err
	}
	st, err := openStore(dbFlag, m, pg)
	if err != nil {
		return nil, "", err
	}
	if testStoreWrapper != nil {
		st = testStoreWrapper(st)
	}
	if isPostgresURL(path) {
		return st, postgresTranscripts(), nil
	}
	if path != memoryDB {
		return st, transcriptsDir(path), nil
	}
	dir, err := os.MkdirTemp("", "agentpool-transcripts-")
	if err != nil {
		st.Close()
		return nil, "", fmt.Errorf("transcripts: %w", err)
	}
	return command.CleanTranscripts(st, dir, true), dir, nil
}

// closeHooks closes a hook registry when the command ends: background
// (async) hooks get a few seconds to finish, then are killed.
func closeHooks(reg *hook.Registry) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := reg.Close(ctx); err != nil {
		slog.Warn("closing hooks", "err", err)
	}
}

// storePath is the database openStore opens: a file path, ":memory:" or
// a PostgreSQL URL.
func storePath(dbFlag string, m *config.Manifest) (string, error) {
	switch {
	case dbFlag != "":
		return dbFlag, nil
	case m != nil && m.Storage.URL != "":
		return m.Storage.URL, nil
	case m != nil && m.Storage.Path == memoryDB:
		return memoryDB, nil
	case m != nil && m.Storage.Path != "":
		return m.ResolvePath(m.Storage.Path), nil
	}
	return defaultDBPath()
}

// storeURL is the database URL --db or the manifest's storage.url names,
// "" when neither does (a path or the default database).
func storeURL(dbFlag string, m *config.Manifest) string {
	if dbFlag != "" || m == nil {
		return dbFlag
	}
	return m.Storage.URL
}

// isPostgresURL says whether a database is a PostgreSQL URL
// (session/postgres.IsURL, which this package does not link: the light
// binary has no PostgreSQL store).
func isPostgresURL(s string) bool {
	l := strings.ToLower(s)
	return strings.HasPrefix(l, "postgres://") || strings.HasPrefix(l, "postgresql://")
}

// defaultDBPath is $XDG_DATA_HOME/agentpool/agentpool.db, falling back to
// ~/.local/share/agentpool/agentpool.db.
func defaultDBPath() (string, error) {
	if dir := os.Getenv("XDG_DATA_HOME"); dir != "" && filepath.IsAbs(dir) {
		return filepath.Join(dir, "agentpool", "agentpool.db"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil || home == "" {
		return "", errors.New("no session database: set --db, storage.path or XDG_DATA_HOME")
	}
	return filepath.Join(home, ".local", "share", "agentpool", "agentpool.db"), nil
}
