// POST /session/{id}/init: the TUI's /init.

package opencode

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"

	"github.com/agentpool/agentpool/id"
	"github.com/agentpool/agentpool/server/opencode/internal/wire"
)

// initPrompt is what /init sends: as OpenCode's /init does, it asks the
// session's agent to write (or improve) AGENTS.md at the project's root,
// the file that coding agents read for a project's conventions.
const initPrompt = `Study this project and write an AGENTS.md file at its root, for the coding agents that will work in it. It should say:
- how to build, lint and test the project, and how to run one single test;
- the code style the code follows: imports, formatting, naming, types, error handling;
- anything about the layout or the tooling a newcomer would not guess.
Keep it short (about 20 to 30 lines). If AGENTS.md exists already, improve it and keep what is right. If the project has rules for other assistants (.cursorrules, .cursor/rules/, .github/copilot-instructions.md, CLAUDE.md), fold what they say in.`

// handleInit runs the session's agent on initPrompt as the session's next
// message (POST /session/{id}/message: same queue, limits and events) and
// answers true once the turn has ended; a refused prompt answers what the
// message route would (400, 404, 409, 429).
func (s *commandsAPI) handleInit(w http.ResponseWriter, r *http.Request) {
	raw, ok := s.bodyBytes(w, r)
	if !ok {
		return
	}
	var body wire.InitBody
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&body); err != nil {
		badRequest(w, "Body", "request body: %v; expected {\"providerID\": string, \"modelID\": string, \"messageID\": string}", err)
		return
	}
	switch {
	case body.ProviderID == "" || body.ModelID == "":
		badRequest(w, "Body", "providerID and modelID are required (the model the turn runs on, one of GET /provider's)")
		return
	case !strings.HasPrefix(body.MessageID, id.Message):
		badRequest(w, "Body", "messageID must be a message id (msg...), got %q", body.MessageID)
		return
	}
	b, err := json.Marshal(wire.PromptBody{MessageID: body.MessageID, Model: &wire.ModelRef{ProviderID: body.ProviderID, ModelID: body.ModelID},
		Parts: []wire.PartInput{{Type: "text", Text: initPrompt}}})
	if err != nil {
		internalError(w, err)
		return
	}
	r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(b)), int64(len(b))
	rec := &answerCapture{header: http.Header{}}
	s.prompts.handlePrompt(rec, r)
	switch {
	case rec.code == 0: // the client went away; the run goes on
	case rec.code == http.StatusOK:
		writeJSON(w, http.StatusOK, true)
	default:
		for k, v := range rec.header {
			w.Header()[k] = v
		}
		writeRaw(w, rec.code, rec.body.Bytes())
	}
}

// answerCapture keeps the answer of a route called on a caller's behalf.
type answerCapture struct {
	header http.Header
	code   int
	body   bytes.Buffer
}

func (c *answerCapture) Header() http.Header { return c.header }

func (c *answerCapture) WriteHeader(code int) {
	if c.code == 0 {
		c.code = code
	}
}

func (c *answerCapture) Write(b []byte) (int, error) {
	c.WriteHeader(http.StatusOK)
	return c.body.Write(b)
}
