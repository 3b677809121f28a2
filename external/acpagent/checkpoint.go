package acpagent

import (
	"context"
	"sync"

	"github.com/coder/acp-go-sdk"

	"github.com/agentpool/agentpool/tool"
)

// turnCheckpoint is where what an external agent changes in one turn is
// captured (checkpoint.Watcher): at the stored prompt the agent answers,
// for the agent's tool call that showed each terminal. The SDK serves
// the agent's requests (fs/write_text_file, terminal/*) concurrently
// with the updates that announce its calls, hence its own lock.
type turnCheckpoint struct {
	n       *Node
	session string // the member's session

	mu    sync.Mutex        // guards msg and calls
	msg   string            // the id of the stored prompt the agent answers
	calls map[string]string // terminal id -> the agent's call that showed it
}

// noteTerminals records the terminals a tool call of the agent shows as
// that call's.
func (c *turnCheckpoint) noteTerminals(id acp.ToolCallId, content []acp.ToolCallContent) {
	for _, part := range content {
		if part.Terminal == nil {
			continue
		}
		c.mu.Lock()
		if c.calls == nil {
			c.calls = map[string]string{}
		}
		c.calls[part.Terminal.TerminalId] = string(id)
		c.mu.Unlock()
	}
}

// setMessage makes mid the stored prompt the agent answers ("" keeps the
// one before: a prompt that could not be stored).
func (c *turnCheckpoint) setMessage(mid string) {
	if mid == "" {
		return
	}
	c.mu.Lock()
	c.msg = mid
	c.mu.Unlock()
}

// message is the id of the stored prompt the agent answers.
func (c *turnCheckpoint) message() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.msg
}

// ended captures what a terminal's command changed since it started (or
// was last seen), now that its end is observed (terminal/wait_for_exit,
// terminal/output with an exit status, terminal/kill, terminal/release,
// the session's end), once: for the agent's tool call that showed the
// terminal, else the call that started it, at the prompt the agent
// answers. What could not be captured is logged (the agent's call is its
// own: no result of ours to say it in).
func (c *turnCheckpoint) ended(ctx context.Context, term *terminal) {
	term.mu.Lock()
	seen := term.seenEnd
	term.seenEnd = true
	term.mu.Unlock()
	if seen {
		return
	}
	id := term.sh.ID()
	c.mu.Lock()
	callID := c.calls[id]
	c.mu.Unlock()
	if callID == "" {
		callID = term.call
	}
	call := tool.Call{ID: callID, SessionID: c.session, MessageID: c.message()}
	if note := c.n.watch.ObserveShell(ctx, call, id, true); note != "" {
		c.n.cfg.Logger.Warn("acpagent: a terminal's changes", "agent", c.n.cfg.Name, "terminal", id, "checkpoint", note)
	}
}
