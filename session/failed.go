package session

import (
	"context"

	"github.com/agentpool/agentpool/event"
)

// StoreErrorCode is the code of the run_error that closes, in its
// session's log, a run whose writes the store did not keep (CloseFailed).
const StoreErrorCode = "store_error"

// notStoredResult is the result of a tool call whose result was not
// stored (CloseFailed).
const notStoredResult = "not stored: the store failed before this tool call's result was stored; what the call did is unknown"

// CloseFailed closes session id after a run whose writes the store did not
// keep (cause, a *NotStoredError): what the stored part of the run left
// open is closed as CloseInterrupted closes it, but as failed, with cause
// as the error (status error, stop reason error, a run_error with code
// StoreErrorCode, tool results that say nothing was stored), and so is
// every session of its subtree that still reads running (one whose start
// was lost too); the session is then marked failed with cause in its
// metadata's "error", whatever its record said: the run failed. It only
// adds what is missing. The caller holds the session's claim.
func CloseFailed(ctx context.Context, st Store, id string, cause error) error {
	s, err := st.GetSession(ctx, id)
	if err != nil {
		return err
	}
	msg := cause.Error()
	how := ending{StatusError, event.StopError, StoreErrorCode, msg, notStoredResult}
	if _, err := closeSession(ctx, st, s, how); err != nil {
		return err
	}
	// A session whose start was lost (created, never logged by its
	// parent) is closed as well: no session of the run reads running.
	tree, err := Subtree(ctx, st, id)
	if err != nil {
		return err
	}
	for _, d := range tree[1:] {
		if unfinished(d) {
			if _, err := closeSession(ctx, st, d, how); err != nil {
				return err
			}
		}
	}
	return st.UpdateSession(ctx, id, func(r *Session) {
		r.Status, r.StopReason = StatusError, event.StopError
		if r.Metadata == nil {
			r.Metadata = map[string]any{}
		}
		r.Metadata["error"] = msg
	})
}
