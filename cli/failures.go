package cli

import (
	"fmt"
	"strings"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/internal/termtext"
	"github.com/agentpool/agentpool/spawn"
)

// maxReason is the most runes of a tool's error shown on a progress line:
// enough for a message, not a failed command's whole output.
const maxReason = 160

// progressNames follows a run's stream for the ✗ lines of run's progress
// (outcome): the agent of every session, so that a line says where in the
// tree it happened ("lead › helper"), and the title of every open tool
// call ("Read notes.md"), so that it says which call. Both are known from
// the stream alone: a sink must not query the store under the recorder's
// lock.
type progressNames struct {
	root   string            // the root's agent
	agents map[string]string // session id → agent
	titles map[string]string // open tool call id → title
	// refused: open tool calls whose spawn a limit refused (shown as such)
	refused map[string]bool
}

// path names the session at the end of ids (a subagent event's Path, the
// session ids below the root), "lead › helper".
func (p *progressNames) path(ids []string) string {
	names := []string{p.root}
	for _, id := range ids {
		names = append(names, p.agents[id])
	}
	for i, n := range names {
		if n == "" {
			names[i] = "?"
		}
	}
	return termtext.Line(strings.Join(names, " › "))
}

// deniedPrefix is how the runtime words the result of a tool call that a
// policy or a hook denied (agent: "tool NAME denied: REASON").
func deniedPrefix(tool string) string { return "tool " + tool + " denied: " }

// note follows e (the inner event of a subagent event whose Path is ids)
// and returns the ✗ line it calls for, or "" when it calls for none.
func (p *progressNames) note(e event.Event, ids []string) string {
	switch v := e.(type) {
	case event.RunStarted:
		if len(ids) == 0 && p.root == "" {
			p.root = v.AgentName
		}
	case event.SpawnSessionStart:
		p.agents[v.ChildSessionID] = v.SourceName
	case event.ToolCallStart:
		p.titles[v.ToolCallID] = v.Title
	case event.ToolCallComplete:
		title, refused := p.titles[v.ToolCallID], p.refused[v.ToolCallID]
		delete(p.titles, v.ToolCallID)
		delete(p.refused, v.ToolCallID)
		if !v.IsError || refused {
			return ""
		}
		if title == "" {
			title = v.ToolName
		}
		verb, reason := "failed", v.ToolResult
		if r, ok := strings.CutPrefix(reason, deniedPrefix(v.ToolName)); ok {
			verb, reason = "denied", r
		}
		return fmt.Sprintf("✗ %s: %s %s: %s", p.path(ids), termtext.Line(title), verb, shortReason(reason))
	case event.Custom:
		if v.EventType == spawn.EventSpawnRefused {
			// The delegating call fails with the same words: this line
			// stands for it.
			if id, _ := v.EventData["tool_call_id"].(string); id != "" {
				p.refused[id] = true
			}
			return termtext.Line(fmt.Sprintf("✗ %s: spawn of %v refused: %v", p.path(ids), v.EventData["node"], v.EventData["error"]))
		}
	}
	return ""
}

// shortReason is a tool's error on one line, at most maxReason runes.
func shortReason(s string) string {
	s = strings.Join(strings.Fields(termtext.Line(s)), " ")
	if r := []rune(s); len(r) > maxReason {
		return string(r[:maxReason]) + "…"
	}
	return s
}
