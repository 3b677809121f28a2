package acpagent

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	acp "github.com/coder/acp-go-sdk"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/internal/detach"
	"github.com/agentpool/agentpool/model"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/spawn"
)

// MetaSessionID is the Metadata key of a child session under which the
// id of the agent's ACP session is stored: what session/load continues.
const MetaSessionID = "acp_session_id"

// maxContextBytes bounds the earlier conversation given as text to a new
// ACP session: its latest messages are kept.
const maxContextBytes = 64 << 10

// openSession opens the ACP session of a delegation and returns the text
// to prompt it with.
//
// A child session that an earlier run of the member left (continued:
// `agentpool run --session CHILD`) has its ACP session's id in its
// Metadata; when the agent can load sessions (initialize said
// loadSession), session/load continues that session, and the prompt is
// the new one alone: the agent has the conversation (the updates it
// replays while loading belong to no prompt and are dropped). Otherwise,
// or when the load fails, a new session (session/new) gets the earlier
// conversation (inv.History: the stored one, or the caller's with
// pass_message_history) as text before the prompt, its latest 64 KiB.
// A new session's id is stored on the child session.
func (n *Node) openSession(ctx context.Context, a *agentConn, conn *acp.ClientSideConnection, inv *spawn.Invocation, servers []acp.McpServer) (acp.SessionId, string, error) {
	if stored, _ := inv.Session.Metadata[MetaSessionID].(string); stored != "" {
		why := "the agent cannot load sessions (its initialize did not offer loadSession)"
		if a.canLoad() {
			_, err := conn.LoadSession(ctx, acp.LoadSessionRequest{SessionId: acp.SessionId(stored), Cwd: n.cfg.Dir, McpServers: servers})
			if err == nil {
				n.cfg.Logger.Info("acpagent: continued the agent's session", "agent", n.cfg.Name, "session", inv.Session.ID, "acp_session", stored)
				n.continued(inv, stored, "")
				return acp.SessionId(stored), inv.Prompt, nil
			}
			if ctx.Err() != nil {
				return "", "", err
			}
			why = "session/load failed: " + describeErr(err)
		}
		n.cfg.Logger.Warn("acpagent: the agent's session is not continued; a new one gets the conversation as text",
			"agent", n.cfg.Name, "session", inv.Session.ID, "acp_session", stored, "why", why)
		n.continued(inv, stored, why)
	}
	sess, err := conn.NewSession(ctx, acp.NewSessionRequest{Cwd: n.cfg.Dir, McpServers: servers})
	if err != nil {
		return "", "", fmt.Errorf("session/new: %s", describeErr(err))
	}
	n.remember(ctx, inv, string(sess.SessionId))
	return sess.SessionId, firstPrompt(n.cfg.SystemPrompt, inv.History, inv.Prompt), nil
}

// EventContinued is the type of the custom event of a continued child
// session: {agent, acp_session_id, loaded, reason (when not loaded)}.
const EventContinued = "acp_session_continued"

// continued tells the child's stream how its ACP session was continued:
// loaded, or not (why: the conversation goes to a new session as text).
func (n *Node) continued(inv *spawn.Invocation, acpSession, why string) {
	data := map[string]any{"agent": n.cfg.Name, "acp_session_id": acpSession, "loaded": why == ""}
	if why != "" {
		data["reason"] = why + "; a new session got the conversation as text"
	}
	inv.Sink.Emit(event.Custom{EventType: EventContinued, Source: "acpagent", EventData: data})
}

// canLoad reports whether the agent offered session/load.
func (a *agentConn) canLoad() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.caps.LoadSession
}

// remember stores the ACP session's id on the child session. A failure
// costs only a later continuation its load.
func (n *Node) remember(ctx context.Context, inv *spawn.Invocation, sid string) {
	st := inv.Runtime.Store()
	if st == nil {
		return
	}
	err := st.UpdateSession(detach.Context(ctx), inv.Session.ID, func(s *session.Session) {
		if s.Metadata == nil {
			s.Metadata = map[string]any{}
		}
		s.Metadata[MetaSessionID] = sid
	})
	if err != nil {
		n.cfg.Logger.Warn("acpagent: store the ACP session id", "session", inv.Session.ID, "err", err)
	}
}

// firstPrompt is the first prompt of a new ACP session: the system
// prompt (ACP has none of its own), the earlier conversation if there is
// one, and the prompt.
func firstPrompt(system string, history []model.Message, prompt string) string {
	var b strings.Builder
	if system != "" {
		b.WriteString(system + "\n\n")
	}
	if t := transcript(history, maxContextBytes); t != "" {
		b.WriteString("The conversation so far:\n\n" + t + "\n\nThe new message:\n\n")
	}
	b.WriteString(prompt)
	return b.String()
}

// transcript is history as text, one "User:" or "Assistant:" paragraph
// per message (tool calls named, results left out), its latest limit
// bytes at most: older messages are left out, with a line that says how
// many.
func transcript(history []model.Message, limit int) string {
	var paras []string
	for _, m := range history {
		if p := paragraph(m); p != "" {
			paras = append(paras, p)
		}
	}
	start, size := len(paras), 0
	for start > 0 && size+len(paras[start-1])+2 <= limit {
		size += len(paras[start-1]) + 2
		start--
	}
	kept := paras[start:]
	if len(kept) == 0 && len(paras) > 0 {
		// The latest message alone is longer than limit: its end.
		start = len(paras) - 1
		kept = []string{tail(paras[start], limit)}
	}
	var b strings.Builder
	if start > 0 {
		fmt.Fprintf(&b, "[%d earlier messages left out]\n\n", start)
	}
	b.WriteString(strings.Join(kept, "\n\n"))
	return b.String()
}

// paragraph is one message of a transcript ("" for one without text or
// tool calls: a tool result).
func paragraph(m model.Message) string {
	var b strings.Builder
	for _, p := range m.Parts {
		switch p.Kind {
		case model.PartText:
			b.WriteString(p.Text)
		case model.PartToolCall:
			b.WriteString("[called " + p.ToolName + "]")
		}
	}
	text := strings.TrimSpace(b.String())
	if text == "" {
		return ""
	}
	who := "Assistant: "
	if m.Role == model.RoleUser {
		who = "User: "
	}
	return who + text
}

// tail is the end of s, at most n bytes, from a character's start.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := len(s) - n
	for i < len(s) && !utf8.RuneStart(s[i]) {
		i++
	}
	return s[i:]
}
