// Stop and SubagentStop at agent/turn-stop: an agent (or a root team, see
// pool's root gate) is about to stop.

package command

import (
	"context"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/hook"
	"github.com/agentpool/agentpool/spawn"
)

// turnStop runs Stop (a root session) or SubagentStop (a child). A block
// (exit 2, decision block) or an additionalContext makes the agent go on
// with the reasons and the context as its next message, as in Claude Code;
// continue: false stops it. Consecutive continues are bounded by the loop
// guard. A root team cannot go on: it has no turn of its own.
func (b *Bridge) turnStop(ctx context.Context, in hook.TurnStop, next hook.Next[hook.TurnStop, hook.StopDecision]) hook.StopDecision {
	ev := Stop
	if in.IsSubagent() {
		ev = SubagentStop
	}
	if !b.Has(ev) {
		return next(ctx, in)
	}
	inv := spawn.InvocationFrom(ctx)
	team := inv != nil && inv.Session.ID == in.SessionID && inv.Session.SourceType != event.SourceAgent
	if team {
		b.teamOutput(in.SessionID, in.FinalMessage)
	}
	b.mu.Lock()
	active := b.blocks[in.SessionID] > 0
	b.mu.Unlock()
	payload := b.common(ctx, in.SessionID, in.Agent)
	payload["stop_hook_active"] = active
	payload["last_assistant_message"] = in.FinalMessage
	f := firing{event: ev, payload: payload, tmpl: HookRun{StopHookActive: &active},
		// A root team stops after its final event.
		storeOnly: team}
	if ev == SubagentStop {
		payload["agent_id"] = in.SessionID
		payload["agent_type"] = in.Agent
		if _, ok := payload["agent_transcript_path"]; !ok {
			payload["agent_transcript_path"] = ""
		}
		f.targets = []string{in.Agent}
		f.tmpl.AgentID, f.tmpl.AgentType = in.SessionID, in.Agent
	}
	runs := b.fire(ctx, f)
	var more []string
	stop := false
	for _, r := range runs {
		switch r.v.decision {
		case vBlock:
			more = append(more, r.v.reason)
		case vStop:
			stop = true
		}
		if r.v.decision != vStop && r.v.context != "" {
			more = append(more, r.v.context)
		}
	}
	if stop || len(more) == 0 {
		// continue: false wins over any block.
		b.stops(in, ev)
		if stop {
			return hook.StopDecision{}
		}
		return next(ctx, in)
	}
	if team {
		b.log.Warn("a Stop hook asked a team to continue; a team has no turn to continue and stops", "team", in.Agent, "session", in.SessionID)
		b.stops(in, ev)
		return next(ctx, in)
	}
	b.mu.Lock()
	b.blocks[in.SessionID]++
	n := b.blocks[in.SessionID]
	delete(b.stopped, in.SessionID)
	b.mu.Unlock()
	if n > b.opts.MaxStopBlocks {
		b.stops(in, ev)
		b.log.Warn("hook loop guard: agent stops despite a blocking hook", "event", ev, "session", in.SessionID, "blocks", n-1)
		b.record(ctx, EventHookLoopGuard, HookLoopGuard{HookEvent: ev, ConsecutiveBlocks: n - 1, Reason: joinNonEmpty(more)}, false)
		return next(ctx, in)
	}
	return hook.StopDecision{Continue: true, Reason: joinNonEmpty(more)}
}

// stops notes that an agent stops after its Stop / SubagentStop hooks:
// the loop guard starts again, and a child's SubagentStop has fired.
func (b *Bridge) stops(in hook.TurnStop, ev string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.blocks, in.SessionID)
	if ev == SubagentStop {
		b.stopped[in.SessionID] = true
	}
}
