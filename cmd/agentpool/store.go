package main

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/session/memory"
	"github.com/agentpool/agentpool/session/sqlite"
)

// memoryDB is the --db value (or storage.path) that keeps nothing on disk.
const memoryDB = ":memory:"

// openStore opens the session store: --db wins over the manifest's
// storage.path (relative to the manifest's directory), else the database in
// the user's data directory. ":memory:" keeps nothing on disk.
func openStore(dbFlag string, m *config.Manifest) (session.Store, error) {
	path, err := storePath(dbFlag, m)
	if err != nil {
		return nil, err
	}
	if path == memoryDB {
		return memory.New(), nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("session database: %w", err)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	return sqlite.Open(path, sqlite.Options{Logger: log})
}

// storePath is the database openStore opens.
func storePath(dbFlag string, m *config.Manifest) (string, error) {
	switch {
	case dbFlag != "":
		return dbFlag, nil
	case m != nil && m.Storage.Path == memoryDB:
		return memoryDB, nil
	case m != nil && m.Storage.Path != "":
		return m.ResolvePath(m.Storage.Path), nil
	}
	return defaultDBPath()
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
