// Session, subagent and Stop events: SessionStart, SessionEnd, Stop /
// SubagentStop and SubagentStart.

package command

import (
	"context"

	"github.com/agentpool/agentpool/hook"
	"github.com/agentpool/agentpool/spawn"
)

func (b *Bridge) sessionStart(ctx context.Context, p hook.SessionStart) error {
	payload := b.common(ctx, p.SessionID)
	payload["source"] = p.Source
	runs := b.fire(ctx, SessionStart, p.Source, payload, HookRun{})
	var ctxs []string
	for _, r := range runs {
		ctxs = append(ctxs, r.v.context)
	}
	if c := joinNonEmpty(ctxs); c != "" {
		return hook.Inject(ctx, p.SessionID, c)
	}
	return nil
}

func (b *Bridge) sessionEnd(ctx context.Context, p hook.SessionEnd) error {
	b.resetBlocks(p.SessionID)
	b.roots.Range(func(k, v any) bool {
		if v.(string) == p.SessionID {
			b.roots.Delete(k)
		}
		return true
	})
	if !b.Has(SessionEnd) {
		return nil
	}
	payload := b.common(ctx, p.SessionID)
	payload["reason"] = string(p.Reason)
	b.fire(ctx, SessionEnd, string(p.Reason), payload, HookRun{})
	return nil
}

func (b *Bridge) resetBlocks(sessionID string) {
	b.mu.Lock()
	delete(b.blocks, sessionID)
	b.mu.Unlock()
}

func (b *Bridge) turnStop(ctx context.Context, in hook.TurnStop, next hook.Next[hook.TurnStop, hook.StopDecision]) hook.StopDecision {
	ev := Stop
	if in.IsSubagent() {
		ev = SubagentStop
	}
	if !b.Has(ev) {
		return next(ctx, in)
	}
	b.mu.Lock()
	active := b.blocks[in.SessionID] > 0
	b.mu.Unlock()
	payload := b.common(ctx, in.SessionID)
	payload["stop_hook_active"] = active
	payload["last_assistant_message"] = in.FinalMessage
	target := ""
	tmpl := HookRun{StopHookActive: &active}
	if ev == SubagentStop {
		payload["agent_id"] = in.SessionID
		payload["agent_type"] = in.Agent
		payload["agent_transcript_path"] = ""
		target = in.Agent
		tmpl.AgentID, tmpl.AgentType = in.SessionID, in.Agent
	}
	runs := b.fire(ctx, ev, target, payload, tmpl)
	var reasons []string
	stop := false
	for _, r := range runs {
		switch r.v.decision {
		case vBlock:
			reasons = append(reasons, r.v.reason)
		case vStop:
			stop = true
		}
	}
	if stop || len(reasons) == 0 {
		// continue: false wins over any block.
		b.resetBlocks(in.SessionID)
		if stop {
			return hook.StopDecision{}
		}
		return next(ctx, in)
	}
	b.mu.Lock()
	b.blocks[in.SessionID]++
	n := b.blocks[in.SessionID]
	b.mu.Unlock()
	if n > b.opts.MaxStopBlocks {
		b.resetBlocks(in.SessionID)
		b.log.Warn("hook loop guard: agent stops despite a blocking hook", "event", ev, "session", in.SessionID, "blocks", n-1)
		b.record(ctx, EventHookLoopGuard, HookLoopGuard{HookEvent: ev, ConsecutiveBlocks: n - 1, Reason: joinNonEmpty(reasons)}, false)
		return next(ctx, in)
	}
	return hook.StopDecision{Continue: true, Reason: joinNonEmpty(reasons)}
}

func (b *Bridge) subagentStart(ctx context.Context, p hook.SubagentStart) error {
	payload := map[string]any{
		"session_id":      p.ParentID,
		"transcript_path": "",
		"cwd":             b.opts.ProjectDir,
		"permission_mode": b.opts.PermissionMode,
		"agent_id":        p.ID,
		"agent_type":      p.Name,
	}
	if inv := spawn.InvocationFrom(ctx); inv != nil && inv.Session.ID == p.ParentID {
		payload["session_id"] = b.root(ctx, inv)
	}
	runs := b.fire(ctx, SubagentStart, p.Name, payload, HookRun{AgentID: p.ID, AgentType: p.Name})
	var ctxs []string
	for _, r := range runs {
		ctxs = append(ctxs, r.v.context)
	}
	if c := joinNonEmpty(ctxs); c != "" {
		return hook.Inject(ctx, p.ID, c)
	}
	return nil
}
