// Running the hooks of one event: selecting them, the common payload
// fields, recording each run.

package command

import (
	"context"
	"encoding/json"
	"strings"
	"sync"

	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/spawn"
)

// matched lists the events whose hooks are selected by their matcher; the
// others (UserPromptSubmit, Stop) ignore it, as in Claude Code.
var matched = map[string]bool{
	PreToolUse: true, PermissionRequest: true, PostToolUse: true, PostToolUseFailure: true,
	SubagentStart: true, SubagentStop: true, SessionStart: true, SessionEnd: true, Notification: true, PreCompact: true,
}

// firing is one event to run the hooks of.
type firing struct {
	event   string
	targets []string // what matchers select by: a name and its aliases
	payload map[string]any
	tmpl    HookRun
	// storeOnly records the runs in the session's log without streaming
	// them: for hooks that run outside the run's span (before its first
	// event, after its last).
	storeOnly bool
	env       []string // added to the hooks' environment
}

// ran is one hook run with its verdict.
type ran struct {
	h       handler
	matcher string
	res     result
	v       verdict
}

// fire runs the hooks of f.event whose matcher selects f.targets,
// concurrently (identical commands once), records each run in the session's
// event log and returns the runs in configuration order. Async hooks are
// started in the background and are not among the runs returned.
func (b *Bridge) fire(ctx context.Context, f firing) []ran {
	var todo, bg []ran
	seen := map[string]bool{}
	for _, g := range b.events[f.event] {
		if matched[f.event] && !g.m.match(f.targets...) {
			continue
		}
		for _, h := range g.hooks {
			if seen[h.key()] {
				continue
			}
			seen[h.key()] = true
			if h.async {
				bg = append(bg, ran{h: h, matcher: g.matcher})
			} else {
				todo = append(todo, ran{h: h, matcher: g.matcher})
			}
		}
	}
	if len(todo)+len(bg) == 0 {
		return nil
	}
	// Only now that hooks will read them are transcripts brought up to date.
	for k, v := range f.payload {
		if r, ok := v.(transcriptRef); ok {
			f.payload[k] = b.transcript(ctx, r.inv, r.root, r.id)
		}
	}
	f.payload["hook_event_name"] = f.event
	data, err := json.Marshal(f.payload)
	if err != nil {
		b.log.Error("hook payload", "event", f.event, "err", err)
		return nil
	}
	data = append(data, '\n')
	for _, r := range bg {
		b.startAsync(ctx, f, r, data)
	}
	var wg sync.WaitGroup
	for i := range todo {
		wg.Go(func() {
			todo[i].res = b.run(ctx, todo[i].h, data, f.env)
			todo[i].v = interpret(f.event, todo[i].res)
		})
	}
	wg.Wait()
	for _, r := range todo {
		b.report(ctx, f, r)
	}
	return todo
}

// report logs a failed run and records every run in the event log.
func (b *Bridge) report(ctx context.Context, f firing, r ran) {
	b.logRun(f.event, r)
	b.record(ctx, EventHookRun, b.runRecord(f, r), f.storeOnly)
}

func (b *Bridge) logRun(ev string, r ran) {
	v := r.v
	if v.decision == vError || v.decision == vTimeout {
		b.log.Warn("hook failed (non-blocking)", "event", ev, "command", r.h.command, "err", v.note)
	} else if v.note != "" {
		b.log.Warn("hook output partly ignored", "event", ev, "command", r.h.command, "note", v.note)
	}
	if v.systemMessage != "" {
		b.log.Info("hook message", "event", ev, "command", r.h.command, "message", v.systemMessage)
	}
}

func (b *Bridge) runRecord(f firing, r ran) HookRun {
	v := r.v
	rec := f.tmpl
	rec.HookEvent, rec.Command, rec.Args, rec.Matcher, rec.Decision = f.event, r.h.command, r.h.args, r.matcher, v.decision
	rec.DurationMS, rec.ExitCode, rec.TimedOut = r.res.duration.Milliseconds(), r.res.exitCode, r.res.timedOut
	rec.Reason, rec.StopReason, rec.SystemMessage, rec.Error = v.reason, v.stopReason, v.systemMessage, v.note
	if !v.suppress {
		rec.AdditionalContext = truncate(v.context, 1000)
	}
	return rec
}

// record emits a custom event into the sink of the session ctx belongs
// to, so that the run's recorder stores it in that session's log (or,
// storeOnly, has the recorder store it without sending it down the live
// stream). data is converted to its JSON object form (what a store
// returns after a reload).
func (b *Bridge) record(ctx context.Context, eventType string, data any, storeOnly bool) {
	inv := spawn.InvocationFrom(ctx)
	if inv == nil || inv.Sink == nil {
		return
	}
	raw, err := json.Marshal(data)
	if err != nil {
		b.log.Error("hook record", "err", err)
		return
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		b.log.Error("hook record", "err", err)
		return
	}
	e := event.Custom{EventType: eventType, EventData: m, Source: "command"}
	if storeOnly {
		inv.Record(e)
		return
	}
	inv.Sink.Emit(e)
}

// common returns the payload fields every event carries, for a hook that
// runs for session sessionID of agent agentName. Inside a subagent,
// session_id is the root session and agent_id, agent_type and
// agent_transcript_path name the subagent; transcript_path is always the
// root session's transcript (both brought up to date when a hook runs).
func (b *Bridge) common(ctx context.Context, sessionID, agentName string) map[string]any {
	p := map[string]any{
		"session_id":      sessionID,
		"transcript_path": "",
		"cwd":             b.opts.ProjectDir,
		"permission_mode": b.permissionMode(agentName),
	}
	inv := spawn.InvocationFrom(ctx)
	if inv == nil || inv.Session.ID != sessionID {
		return p
	}
	b.noteRun(inv)
	root := sessionID
	if inv.Session.ParentID != "" {
		root = b.root(ctx, inv)
		p["session_id"] = root
		p["agent_id"] = inv.Session.ID
		p["agent_type"] = inv.Session.AgentName
		p["agent_transcript_path"] = transcriptRef{inv, root, inv.Session.ID}
	}
	p["transcript_path"] = transcriptRef{inv, root, root}
	return p
}

// transcriptRef stands in a payload for the path of a transcript, which
// fire brings up to date (reading the session's messages) only when a hook
// is about to run.
type transcriptRef struct {
	inv      *spawn.Invocation // any invocation of the run: its store and runtime
	root, id string
}

// permissionMode is Claude Code's permission_mode for an agent's tool
// approval policy: bypassPermissions when nothing asks, acceptEdits when
// file edits run without asking, default otherwise.
func (b *Bridge) permissionMode(agentName string) string {
	if b.opts.PermissionMode != "" {
		return b.opts.PermissionMode
	}
	if b.reg == nil {
		return "default"
	}
	policy := b.reg.Approvals.Of(agentName)
	if policy["*"] == config.ApprovalAllow {
		asks := false
		for _, v := range policy {
			asks = asks || v == config.ApprovalAsk
		}
		if !asks {
			return "bypassPermissions"
		}
	}
	if config.ToolApprovalFor(policy, "Write") == config.ApprovalAllow && config.ToolApprovalFor(policy, "Edit") == config.ApprovalAllow {
		return "acceptEdits"
	}
	return "default"
}

// root finds the root session of inv's session through the store.
func (b *Bridge) root(ctx context.Context, inv *spawn.Invocation) string {
	id := inv.Session.ID
	if inv.Session.ParentID == "" {
		return id
	}
	if v, ok := b.roots.Load(id); ok {
		return v.(string)
	}
	cur := inv.Session
	st := inv.Runtime.Store()
	for i := 0; cur.ParentID != "" && st != nil && i < 1000; i++ {
		if v, ok := b.roots.Load(cur.ParentID); ok {
			cur.ID, cur.ParentID = v.(string), ""
			break
		}
		p, err := st.GetSession(context.WithoutCancel(ctx), cur.ParentID)
		if err != nil {
			break
		}
		cur = p
	}
	b.roots.Store(id, cur.ID)
	return cur.ID
}

func joinNonEmpty(parts []string) string {
	var keep []string
	for _, p := range parts {
		if strings.TrimSpace(p) != "" {
			keep = append(keep, p)
		}
	}
	return strings.Join(keep, "\n")
}
