package opencode

import (
	"net/http"

	"github.com/agentpool/agentpool/checkpoint"
)

// revertMode reads the ?mode= of POST /session/{id}/revert, an agentpool
// extension for the web view's rewind (the OpenCode TUI sends none):
// code (the files only), conversation (the messages only) or both (the
// default, the TUI's /undo), as `agentpool sessions rewind --code |
// --conversation | --both`. Anything else is a 400.
func revertMode(w http.ResponseWriter, r *http.Request) (checkpoint.Mode, bool) {
	switch v := r.URL.Query().Get("mode"); v {
	case "", string(checkpoint.Both):
		return checkpoint.Both, true
	case string(checkpoint.Code):
		return checkpoint.Code, true
	case string(checkpoint.Conversation):
		return checkpoint.Conversation, true
	default:
		badRequest(w, "Query", "mode must be code, conversation or both, got %q", v)
		return "", false
	}
}
