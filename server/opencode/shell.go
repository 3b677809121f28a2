// POST /session/{id}/shell: the TUI's !cmd.

package opencode

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/pool"
	"github.com/agentpool/agentpool/server/opencode/internal/wire"
	"github.com/agentpool/agentpool/session"
)

// handleShell runs the body's command line through the Bash tool of the
// session's agent (pool.RunRequest.Shell: the agent's confinement, its
// PreToolUse hooks and approval rules apply, as to a call of its model),
// records it in the session (a synthetic user message, an assistant
// message with the bash tool part, its result), which the run's events
// publish, and answers that assistant message {info, parts}. The model
// runs no turn; it reads the command and its output in its next one. The
// body's agent and model are accepted: the session's agent runs it. A
// session that is running is refused (400).
func (s *commandsAPI) handleShell(w http.ResponseWriter, r *http.Request) {
	sid := r.PathValue("sessionID")
	raw, ok := s.bodyBytes(w, r)
	if !ok {
		return
	}
	var body wire.ShellBody
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&body); err != nil {
		badRequest(w, "Body", "request body: %v; expected {\"agent\": string, \"command\": string, \"model\"?: {providerID, modelID}, \"messageID\"?: string}", err)
		return
	}
	if strings.TrimSpace(body.Command) == "" || body.Agent == "" {
		badRequest(w, "Body", "agent and command are required (command: the shell command line to run)")
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
			badRequest(w, "Body", "session %s is running: run the command once its run has ended", sid)
			return
		}
	}
	clearRevert(ctx, s.store, sid, s.log) // the command goes on from a revert point (revert.go)
	res, err := s.pool.RunSink(ctx, pool.RunRequest{Node: rec.AgentName, SessionID: sid, Shell: body.Command}, event.Discard)
	switch {
	case errors.Is(err, session.ErrRunning):
		badRequest(w, "Body", "session %s is running: run the command once its run has ended", sid)
		return
	case err != nil:
		badRequest(w, "Body", "shell: %v", err)
		return
	case res.Result.Err != nil:
		badRequest(w, "Body", "shell: %v", res.Result.Err)
		return
	}
	var last []json.RawMessage
	if err := json.Unmarshal(s.lastMessage(r), &last); err != nil || len(last) == 0 {
		internalError(w, errors.New("shell: the command's message is not in the session's transcript"))
		return
	}
	writeRaw(w, http.StatusOK, last[0])
}

// lastMessage is GET /session/{id}/message?limit=1 of r's session: the
// list of its last message, as the transcript shows it.
func (s *commandsAPI) lastMessage(r *http.Request) []byte {
	q := r.Clone(r.Context())
	q.Method, q.Body, q.ContentLength = http.MethodGet, http.NoBody, 0
	q.URL.RawQuery = "limit=1"
	c := &answerCapture{header: http.Header{}}
	s.history.handleMessages(c, q)
	if c.code != http.StatusOK {
		return nil
	}
	return c.body.Bytes()
}
