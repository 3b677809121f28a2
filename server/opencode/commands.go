package opencode

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"

	"github.com/agentpool/agentpool/server/opencode/internal/wire"
)

// commandsAPI serves the TUI's commands: the pool's slash commands and
// /compact (summarize).
type commandsAPI struct{ *base }

// handleCommands answers GET /command: the pool's slash commands
// (pool.Pool.Commands: the project's .claude/commands), which the TUI
// lists after "/".
func (s *commandsAPI) handleCommands(w http.ResponseWriter, r *http.Request) {
	cs := s.pool.Commands()
	out := make([]wire.Command, 0, len(cs))
	for _, c := range cs {
		hints := []string{}
		if strings.Contains(c.Template, "$ARGUMENTS") {
			hints = append(hints, "$ARGUMENTS")
		}
		out = append(out, wire.Command{Name: c.Name, Description: c.Description, Source: "command", Template: c.Template, Hints: hints})
	}
	if _, own := s.pool.Command(initCommand); !own {
		out = append(out, wire.Command{Name: initCommand, Description: initDescription, Source: "command", Template: initPrompt, Hints: []string{}})
	}
	writeJSON(w, http.StatusOK, out)
}

// initCommand is OpenCode's own /init. Its server lists it among the
// commands, and the TUI (1.18.33, which has no /init of its own) offers
// it from that list and runs it with POST /session/{id}/command; it is
// listed and run here too (initPrompt, as POST /session/{id}/init sends
// it), unless the project has a command of that name.
const (
	initCommand     = "init"
	initDescription = "create or update AGENTS.md for this project"
)

// handleCommand answers POST /session/{id}/command: the command's prompt,
// expanded with the arguments, is sent as a message (handlePrompt: same
// limits, queue and answer).
func (s *commandsAPI) handleCommand(w http.ResponseWriter, r *http.Request) {
	if r.ContentLength > s.opts.MaxBodyBytes {
		discardBody(r)
		bodyTooLarge(w, s.opts.MaxBodyBytes)
		return
	}
	raw, ok := s.bodyBytes(w, r)
	if !ok {
		return
	}
	var body wire.CommandBody
	if !decodeBody(w, raw, &body, false) {
		return
	}
	if len(body.Parts) > 0 {
		badRequest(w, "Body", "file parts are not supported: send the command's arguments as text")
		return
	}
	name := strings.TrimPrefix(strings.TrimSpace(body.Command), "/")
	c, found := s.pool.Command(name)
	var text string
	switch {
	case found:
		text = c.Expand(body.Arguments)
	case name == initCommand:
		text = initPrompt
		if a := strings.TrimSpace(body.Arguments); a != "" {
			text += "\n\n" + a
		}
	default:
		names := []string{}
		for _, c := range s.pool.Commands() {
			names = append(names, c.Name)
		}
		names = append(names, initCommand)
		badRequest(w, "Body", "unknown command %q; available: %s", name, strings.Join(names, ", "))
		return
	}
	model, err := parseModelString(body.Model)
	if err != nil {
		badRequest(w, "Body", "%v", err)
		return
	}
	prompt := wire.PromptBody{MessageID: body.MessageID, Agent: body.Agent, Model: model,
		Parts: []wire.PartInput{{Type: "text", Text: text}}}
	b, err := json.Marshal(prompt)
	if err != nil {
		badRequest(w, "Body", "%v", err)
		return
	}
	r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(b)), int64(len(b))
	s.prompts.handlePrompt(w, r)
}
