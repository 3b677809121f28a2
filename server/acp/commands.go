package acp

import "strings"

// availableCommand is one entry of available_commands_update.
type availableCommand struct {
	Name        string                 `json:"name"`
	Description string                 `json:"description"`
	Input       *availableCommandInput `json:"input,omitempty"`
}

// availableCommandInput says the command takes free text after its name.
type availableCommandInput struct {
	Hint string `json:"hint"`
}

type availableCommandsUpdate struct {
	SessionUpdate     string             `json:"sessionUpdate"`
	AvailableCommands []availableCommand `json:"availableCommands"`
}

// offerCommands tells the editor the pool's slash commands (pool.Commands:
// the project's .claude/commands) for session sid, which a prompt that
// begins with "/name" then runs; nothing when the pool has none.
func (c *conn) offerCommands(sid string) {
	cs := c.s.pool.Commands()
	if len(cs) == 0 {
		return
	}
	u := availableCommandsUpdate{SessionUpdate: "available_commands_update", AvailableCommands: make([]availableCommand, 0, len(cs))}
	for _, pc := range cs {
		ac := availableCommand{Name: pc.Name, Description: pc.Description}
		if ac.Description == "" {
			ac.Description = "/" + pc.Name + " (" + pc.Source + " command)"
		}
		if strings.Contains(pc.Template, "$ARGUMENTS") {
			ac.Input = &availableCommandInput{Hint: "arguments"}
		}
		u.AvailableCommands = append(u.AvailableCommands, ac)
	}
	c.updater(sid)(sid, u)
}
