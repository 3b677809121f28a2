// Package migration reads a store's embedded schema migrations: the files
// NNNN_name.sql of a directory, numbered 1, 2, ... without gaps. Each
// store applies them its own way (SQLite's user_version, PostgreSQL's
// schema_migrations table); the reading and its checks are shared.
package migration
