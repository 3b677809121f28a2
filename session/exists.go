package session

import "context"

// Exister is implemented by a store that can tell whether a session exists
// more cheaply than GetSession (no record to read and decode; often no
// read at all). The recorder asks it for every child it sees start; with a
// store that does not implement it, GetSession answers.
type Exister interface {
	// Exists reports whether the session is in the store.
	Exists(ctx context.Context, id string) (bool, error)
}
