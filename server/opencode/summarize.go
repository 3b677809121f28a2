// POST /session/{id}/summarize: a manual compaction (the TUI's /compact).

package opencode

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/pool"
	"github.com/agentpool/agentpool/server/opencode/internal/wire"
	"github.com/agentpool/agentpool/session"
)

// handleSummarize compacts an idle session's conversation: its agent's
// model summarises the turns before the latest one into one message
// (pool.RunRequest.Compact), the original messages stay stored, and the
// session's later prompts send the summary and the kept turns. The run
// is seen as any run is (its compaction event, its answer: the summary);
// session.compacted follows. A session that is running is refused (400).
func (s *commandsAPI) handleSummarize(w http.ResponseWriter, r *http.Request) {
	sid := r.PathValue("sessionID")
	b, ok := s.bodyBytes(w, r)
	if !ok {
		return
	}
	invalid := func(field, format string, args ...any) {
		writeJSON(w, http.StatusBadRequest, wire.InvalidRequestError{Tag: "InvalidRequestError", Message: fmt.Sprintf(format, args...), Kind: "Body", Field: field})
	}
	var body wire.SummarizeBody
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&body); err != nil {
		invalid("", "request body: %v; expected {\"providerID\": string, \"modelID\": string, \"auto\"?: boolean}", err)
		return
	}
	if dec.More() {
		invalid("", "request body: more than one JSON value")
		return
	}
	if body.ProviderID == "" || body.ModelID == "" {
		invalid("providerID", "providerID and modelID are required (the session's agent summarises with its own model)")
		return
	}
	ctx := r.Context()
	rec, err := s.store.GetSession(ctx, sid)
	if err != nil {
		storeError(w, sid, err)
		return
	}
	if st := s.facts.get(sid); st != nil {
		st.mu.Lock()
		busy := st.active != nil
		st.mu.Unlock()
		if busy {
			invalid("", "session %s is running: summarize it once its run has ended", sid)
			return
		}
	}
	res, err := s.pool.RunSink(ctx, pool.RunRequest{Node: rec.AgentName, SessionID: sid, Compact: &pool.CompactRequest{}}, event.Discard)
	switch {
	case errors.Is(err, session.ErrRunning):
		invalid("", "session %s is running: summarize it once its run has ended", sid)
		return
	case err != nil:
		invalid("", "summarize %s: %v", sid, err)
		return
	case res.Result.Err != nil:
		invalid("", "summarize %s: %v", sid, res.Result.Err)
		return
	}
	s.publish("session.compacted", sid, wire.SessionCompacted{SessionID: sid})
	writeJSON(w, http.StatusOK, true)
}
