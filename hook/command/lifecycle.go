// Session and subagent events: SessionStart, SessionEnd, SubagentStart and
// the SubagentStop of a child that ends without stopping through its own
// turn (a team, a child that failed).

package command

import (
	"context"
	"os"
	"path/filepath"

	"github.com/agentpool/agentpool/hook"
	"github.com/agentpool/agentpool/model"
	"github.com/agentpool/agentpool/spawn"
)

func (b *Bridge) sessionStart(ctx context.Context, p hook.SessionStart) error {
	b.noteRun(spawn.InvocationFrom(ctx))
	if !b.Has(SessionStart) {
		return nil
	}
	payload := b.common(ctx, p.SessionID, p.Agent)
	payload["source"] = p.Source
	payload["model"] = p.Model
	var env []string
	if f := b.tr.envFile(p.SessionID); f != "" {
		env = append(env, "CLAUDE_ENV_FILE="+f)
	}
	// SessionStart runs before the run's first event: its records go to
	// the log only.
	runs := b.fire(ctx, firing{event: SessionStart, targets: []string{p.Source}, payload: payload, storeOnly: true, env: env})
	var ctxs []string
	for _, r := range runs {
		ctxs = append(ctxs, r.v.context)
	}
	if c := joinNonEmpty(ctxs); c != "" {
		return hook.Inject(ctx, p.SessionID, c)
	}
	return nil
}

// Claude Code's SessionEnd reasons.
const (
	endOther           = "other"
	endPromptInputExit = "prompt_input_exit"
)

func (b *Bridge) sessionEnd(ctx context.Context, p hook.SessionEnd) error {
	defer b.forgetRoot(p.SessionID)
	if inv := spawn.InvocationFrom(ctx); inv != nil && inv.Session.ID == p.SessionID {
		b.transcript(ctx, inv, p.SessionID, p.SessionID) // complete it, whatever runs
	}
	if !b.Has(SessionEnd) {
		return nil
	}
	payload := b.common(ctx, p.SessionID, p.Agent)
	reason := endOther
	if p.Cause == hook.CauseDisconnected {
		// The editor (the prompt's front end) went away, as a user leaves
		// Claude Code at its prompt.
		reason = endPromptInputExit
	}
	payload["reason"] = reason
	payload["stop_reason"] = string(p.Reason) // agentpool's: how the last run ended
	b.fire(ctx, firing{event: SessionEnd, targets: []string{reason}, payload: payload, storeOnly: true})
	return nil
}

// forgetRoot drops the state of a root session that ended.
func (b *Bridge) forgetRoot(id string) {
	b.resetBlocks(id)
	b.mu.Lock()
	delete(b.teamRuns, id)
	b.mu.Unlock()
	b.roots.Range(func(k, v any) bool {
		if v.(string) == id {
			b.roots.Delete(k)
		}
		return true
	})
	b.tr.forget(id)
}

func (b *Bridge) resetBlocks(sessionID string) {
	b.mu.Lock()
	delete(b.blocks, sessionID)
	b.mu.Unlock()
}

func (b *Bridge) subagentStart(ctx context.Context, p hook.SubagentStart) error {
	parent := spawn.InvocationFrom(ctx)
	b.noteRun(parent) // a team's members start in the team's run
	if parent == nil || parent.Session.ID != p.ParentID {
		parent = nil
	}
	root := p.ParentID
	if parent != nil {
		root = b.root(ctx, parent)
	}
	b.roots.Store(p.ID, root)
	if !b.Has(SubagentStart) {
		return nil
	}
	payload := b.common(ctx, p.ParentID, p.ParentAgent)
	payload["session_id"] = root
	payload["agent_id"] = p.ID
	payload["agent_type"] = p.Name
	payload["agent_transcript_path"] = transcriptRef{parent, root, p.ID}
	runs := b.fire(ctx, firing{event: SubagentStart, targets: []string{p.Name}, payload: payload, tmpl: HookRun{AgentID: p.ID, AgentType: p.Name}})
	var ctxs []string
	for _, r := range runs {
		ctxs = append(ctxs, r.v.context)
	}
	if c := joinNonEmpty(ctxs); c != "" {
		return hook.Inject(ctx, p.ID, c)
	}
	return nil
}

// subagentEnd completes a child's transcript and gives it its SubagentStop
// when it did not stop through its own turn: a team (it has none), a child
// that failed, was cancelled or ran out of turns. So every SubagentStart
// has a SubagentStop. Such a SubagentStop runs after the child ended: a
// block cannot make it continue (the run is recorded, and logged).
func (b *Bridge) subagentEnd(ctx context.Context, e hook.SubagentEnd) error {
	parent := spawn.InvocationFrom(ctx)
	if parent == nil || parent.Session.ID != e.ParentID {
		parent = nil
	}
	root := e.ParentID
	if v, ok := b.roots.Load(e.ID); ok {
		root = v.(string)
	}
	text := partsText(e.LastAssistantMessage)
	b.teamOutput(e.ID, text)
	b.mu.Lock()
	stopped := b.stopped[e.ID]
	active := b.blocks[e.ID] > 0
	delete(b.stopped, e.ID)
	delete(b.blocks, e.ID)
	b.mu.Unlock()
	defer func() {
		b.mu.Lock()
		delete(b.teamRuns, e.ID)
		b.mu.Unlock()
		b.roots.Delete(e.ID)
		b.tr.forget(e.ID)
	}()
	b.transcript(ctx, parent, root, e.ID) // complete it, whatever runs
	if stopped || !b.Has(SubagentStop) {
		return nil
	}
	payload := b.common(ctx, e.ParentID, e.ParentAgent)
	payload["session_id"] = root
	payload["agent_id"] = e.ID
	payload["agent_type"] = e.Name
	payload["agent_transcript_path"] = transcriptRef{parent, root, e.ID}
	payload["stop_hook_active"] = active
	payload["last_assistant_message"] = text
	runs := b.fire(ctx, firing{event: SubagentStop, targets: []string{e.Name}, payload: payload,
		tmpl: HookRun{AgentID: e.ID, AgentType: e.Name, StopHookActive: &active}})
	for _, r := range runs {
		if r.v.decision == vBlock || r.v.context != "" {
			b.log.Warn("a SubagentStop hook asked a subagent that has ended to continue; it cannot", "agent_type", e.Name, "agent_id", e.ID, "stop_reason", e.StopReason)
			break
		}
	}
	return nil
}

func partsText(parts []model.Part) string {
	return model.Message{Parts: parts}.Text()
}

// envFile is CLAUDE_ENV_FILE of a root session's SessionStart hooks: a file
// next to its transcript where they may write export lines ("" when there
// is no transcript directory).
func (t *transcripts) envFile(root string) string {
	f := t.envPath(root)
	if f == "" || os.MkdirAll(filepath.Dir(f), 0o700) != nil {
		return ""
	}
	return f
}

// envPath is where envFile is ("" when there is no transcript directory).
func (t *transcripts) envPath(root string) string {
	f := t.file(root, root)
	if f == nil {
		return ""
	}
	return filepath.Join(filepath.Dir(f.path), root, "session-env.sh")
}

// shellEnvFile is the CLAUDE_ENV_FILE of the root session of the tool
// call's session when SessionStart hooks wrote something to it: as in
// Claude Code, every Bash command of the session (its subagents' too)
// runs with what they exported.
func (b *Bridge) shellEnvFile(ctx context.Context) string {
	inv := spawn.InvocationFrom(ctx)
	if inv == nil {
		return ""
	}
	f := b.tr.envPath(b.root(ctx, inv))
	if f == "" {
		return ""
	}
	if st, err := os.Stat(f); err != nil || st.Size() == 0 {
		return ""
	}
	return f
}
