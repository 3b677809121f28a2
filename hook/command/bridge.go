package command

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/hook"
	"github.com/agentpool/agentpool/spawn"
)

// DefaultMaxStopBlocks is how many consecutive Stop / SubagentStop blocks
// make an agent continue before it stops anyway.
const DefaultMaxStopBlocks = 8

// EventHookRun is the event_type of the custom event that records a hook
// run in the session's event log.
const EventHookRun = "hook_run"

// EventHookLoopGuard is the event_type recorded when the loop guard stops
// an agent despite a blocking Stop / SubagentStop hook.
const EventHookLoopGuard = "hook_loop_guard"

// HookRun is the event_data of a hook_run event: one hook command run.
type HookRun struct {
	HookEvent string `json:"hook_event"` // PreToolUse, Stop, ...
	Command   string `json:"command"`    // as configured
	Matcher   string `json:"matcher,omitempty"`
	// Decision is none, allow, ask, deny, block, stop (continue: false),
	// error (a non-blocking error) or timeout.
	Decision          string `json:"decision"`
	DurationMS        int64  `json:"duration_ms"`
	ExitCode          int    `json:"exit_code"` // -1 when it did not exit (killed, not started)
	Reason            string `json:"reason,omitempty"`
	StopReason        string `json:"stop_reason,omitempty"`
	AdditionalContext string `json:"additional_context,omitempty"` // cut to 1000 bytes; left out with suppressOutput
	SystemMessage     string `json:"system_message,omitempty"`
	TimedOut          bool   `json:"timed_out,omitempty"`
	Error             string `json:"error,omitempty"` // the error, or why part of the output was ignored
	ToolName          string `json:"tool_name,omitempty"`
	ToolUseID         string `json:"tool_use_id,omitempty"`
	AgentID           string `json:"agent_id,omitempty"`
	AgentType         string `json:"agent_type,omitempty"`
	StopHookActive    *bool  `json:"stop_hook_active,omitempty"`
}

// HookLoopGuard is the event_data of a hook_loop_guard event.
type HookLoopGuard struct {
	HookEvent         string `json:"hook_event"`
	ConsecutiveBlocks int    `json:"consecutive_blocks"`
	Reason            string `json:"reason"` // the block that was overridden
}

// Options configure a Bridge.
type Options struct {
	// ProjectDir is CLAUDE_PROJECT_DIR, the hooks' working directory and the
	// payload's cwd: the session's working directory. Default: the
	// process's working directory (Load: the manifest's directory).
	ProjectDir string
	// Env is added to the hooks' environment (KEY=VALUE).
	Env []string
	// Logger receives non-blocking hook errors and ignored settings.
	Logger *slog.Logger
	// PermissionMode is the payload's permission_mode ("default").
	PermissionMode string
	// MaxStopBlocks is the loop guard (DefaultMaxStopBlocks when 0).
	MaxStopBlocks int
	// Shell runs the commands as Shell -c COMMAND (/bin/sh).
	Shell string
}

// Bridge runs command hooks of the Claude Code / Codex settings format at
// the hook points of a hook.Registry.
type Bridge struct {
	opts   Options
	log    *slog.Logger
	events map[string][]group

	mu     sync.Mutex
	blocks map[string]int // session id -> consecutive Stop/SubagentStop blocks
	roots  sync.Map       // session id -> root session id
}

type group struct {
	matcher string
	re      *regexp.Regexp // nil matches everything
	hooks   []handler
}

type handler struct {
	command string
	timeout time.Duration
	source  string
}

// New compiles settings into a bridge.
func New(s Settings, opts Options) (*Bridge, error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.ProjectDir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return nil, err
		}
		opts.ProjectDir = wd
	}
	if abs, err := filepath.Abs(opts.ProjectDir); err == nil {
		opts.ProjectDir = abs
	}
	if opts.PermissionMode == "" {
		opts.PermissionMode = "default"
	}
	if opts.MaxStopBlocks <= 0 {
		opts.MaxStopBlocks = DefaultMaxStopBlocks
	}
	if opts.Shell == "" {
		opts.Shell = defaultShell
	}
	b := &Bridge{opts: opts, log: opts.Logger, events: map[string][]group{}, blocks: map[string]int{}}
	for _, line := range s.Ignored {
		b.log.Warn("hook settings: " + line)
	}
	for ev, gs := range s.Hooks {
		for i, g := range gs {
			re, err := compileMatcher(g.Matcher)
			if err != nil {
				return nil, fmt.Errorf("%s: hooks.%s[%d].matcher: invalid regular expression %q: %v", g.Source, ev, i, g.Matcher, err)
			}
			cg := group{matcher: g.Matcher, re: re}
			for _, h := range g.Hooks {
				if h.Type != "command" || strings.TrimSpace(h.Command) == "" {
					continue
				}
				t := DefaultTimeout
				if h.Timeout > 0 {
					t = time.Duration(h.Timeout * float64(time.Second))
				}
				cg.hooks = append(cg.hooks, handler{command: h.Command, timeout: t, source: g.Source})
			}
			if len(cg.hooks) > 0 {
				b.events[ev] = append(b.events[ev], cg)
			}
		}
	}
	return b, nil
}

// Load builds the hook registry of a manifest: the tool_approval policies
// of its agents, and the command hooks of the settings files listed in
// hooks.settings (paths relative to the manifest's directory, merged in
// order). The hooks run in the manifest's directory.
func Load(m *config.Manifest) (*hook.Registry, error) {
	return LoadWith(m, Options{})
}

// LoadWith is Load with options; an empty ProjectDir is the manifest's
// directory.
func LoadWith(m *config.Manifest, opts Options) (*hook.Registry, error) {
	reg := hook.New(hook.Options{Logger: opts.Logger})
	if err := Install(reg, m, opts); err != nil {
		return nil, err
	}
	return reg, nil
}

// Install adds what the manifest declares to an existing registry (one
// that already holds, say, a protocol server's approval listener): the
// agents' tool_approval policies and the command hooks of hooks.settings.
// An empty ProjectDir is the manifest's directory.
func Install(reg *hook.Registry, m *config.Manifest, opts Options) error {
	if opts.ProjectDir == "" {
		opts.ProjectDir = m.Dir()
	}
	reg.ApplyManifest(m)
	if len(m.Hooks.Settings) == 0 {
		return nil
	}
	paths := make([]string, len(m.Hooks.Settings))
	for i, p := range m.Hooks.Settings {
		paths[i] = m.ResolvePath(p)
	}
	s, err := LoadSettings(paths...)
	if err != nil {
		return err
	}
	b, err := New(s, opts)
	if err != nil {
		return err
	}
	b.Register(reg)
	return nil
}

// Has reports whether any hook is configured for event.
func (b *Bridge) Has(event string) bool { return len(b.events[event]) > 0 }

// maxTimeout is the longest timeout of event's hooks.
func (b *Bridge) maxTimeout(event string) time.Duration {
	var t time.Duration
	for _, g := range b.events[event] {
		for _, h := range g.hooks {
			t = max(t, h.timeout)
		}
	}
	return t
}

// emitGrace is added to an emit listener's timeout so that the hooks' own
// timeouts (which kill them) come first.
const emitGrace = 5 * time.Second

// Register adds the bridge's listeners to reg, for the events that have
// hooks.
func (b *Bridge) Register(reg *hook.Registry) {
	emitOpts := func(ev string) []hook.Option {
		return []hook.Option{hook.WithName("command:" + ev), hook.WithTimeout(b.maxTimeout(ev) + emitGrace)}
	}
	if b.Has(SessionStart) {
		reg.OnSessionStart.Register(b.sessionStart, emitOpts(SessionStart)...)
	}
	// Always: it also clears the loop guard of the session.
	reg.OnSessionEnd.Register(b.sessionEnd, emitOpts(SessionEnd)...)
	if b.Has(UserPromptSubmit) {
		reg.OnPromptSubmit.Use(b.promptSubmit, hook.WithName("command:"+UserPromptSubmit))
	}
	if b.Has(PreToolUse) {
		reg.OnPreExecute.Use(b.preToolUse, hook.WithName("command:"+PreToolUse))
	}
	if b.Has(PostToolUse) {
		reg.OnPostExecute.Use(b.postToolUse, hook.WithName("command:"+PostToolUse))
	}
	if b.Has(Stop) || b.Has(SubagentStop) {
		reg.OnTurnStop.Use(b.turnStop, hook.WithName("command:Stop"))
		reg.OnSubagentEnd.Register(func(_ context.Context, e hook.SubagentEnd) error {
			b.resetBlocks(e.ID)
			return nil
		}, hook.WithName("command:loop-guard"))
	}
	if b.Has(SubagentStart) {
		reg.OnSubagentStart.Register(b.subagentStart, emitOpts(SubagentStart)...)
	}
}

// matched lists the events whose hooks are selected by their matcher; the
// others (UserPromptSubmit, Stop) ignore it.
var matched = map[string]bool{
	PreToolUse: true, PostToolUse: true, SubagentStart: true, SubagentStop: true, SessionStart: true, SessionEnd: true,
}

// ran is one hook run with its verdict.
type ran struct {
	h       handler
	matcher string
	res     result
	v       verdict
}

// fire runs the hooks of event whose matcher matches target, concurrently
// (identical commands once), records each run in the session's event log
// and returns the runs in configuration order.
func (b *Bridge) fire(ctx context.Context, event, target string, payload map[string]any, tmpl HookRun) []ran {
	var todo []ran
	seen := map[string]bool{}
	for _, g := range b.events[event] {
		if g.re != nil && matched[event] && !g.re.MatchString(target) {
			continue
		}
		for _, h := range g.hooks {
			if seen[h.command] {
				continue
			}
			seen[h.command] = true
			todo = append(todo, ran{h: h, matcher: g.matcher})
		}
	}
	if len(todo) == 0 {
		return nil
	}
	payload["hook_event_name"] = event
	data, err := json.Marshal(payload)
	if err != nil {
		b.log.Error("hook payload", "event", event, "err", err)
		return nil
	}
	data = append(data, '\n')
	var wg sync.WaitGroup
	for i := range todo {
		wg.Go(func() {
			todo[i].res = b.run(ctx, todo[i].h, data)
			todo[i].v = interpret(event, todo[i].res)
		})
	}
	wg.Wait()
	for _, r := range todo {
		b.report(ctx, event, r, tmpl)
	}
	return todo
}

// report logs a failed run and records every run in the event log.
func (b *Bridge) report(ctx context.Context, ev string, r ran, tmpl HookRun) {
	v := r.v
	if v.decision == vError || v.decision == vTimeout {
		b.log.Warn("hook failed (non-blocking)", "event", ev, "command", r.h.command, "err", v.note)
	} else if v.note != "" {
		b.log.Warn("hook output partly ignored", "event", ev, "command", r.h.command, "note", v.note)
	}
	if v.systemMessage != "" {
		b.log.Info("hook message", "event", ev, "command", r.h.command, "message", v.systemMessage)
	}
	rec := tmpl
	rec.HookEvent, rec.Command, rec.Matcher, rec.Decision = ev, r.h.command, r.matcher, v.decision
	rec.DurationMS, rec.ExitCode, rec.TimedOut = r.res.duration.Milliseconds(), r.res.exitCode, r.res.timedOut
	rec.Reason, rec.StopReason, rec.SystemMessage, rec.Error = v.reason, v.stopReason, v.systemMessage, v.note
	if !v.suppress {
		rec.AdditionalContext = truncate(v.context, 1000)
	}
	// Session-level hooks run outside the run's span (before run_started,
	// after the final event): they go to the session's log in the store,
	// not to the live stream, whose first and last events stay the run's.
	b.record(ctx, EventHookRun, rec, ev == SessionStart || ev == SessionEnd)
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

// common returns the payload fields every event carries. sessionID is the
// session the hook runs for; inside a subagent agent_id and agent_type
// name it and session_id is the root session.
func (b *Bridge) common(ctx context.Context, sessionID string) map[string]any {
	p := map[string]any{
		"session_id":      sessionID,
		"transcript_path": "",
		"cwd":             b.opts.ProjectDir,
		"permission_mode": b.opts.PermissionMode,
	}
	inv := spawn.InvocationFrom(ctx)
	if inv == nil || inv.Session.ID != sessionID {
		return p
	}
	if inv.Session.ParentID != "" {
		p["agent_id"] = inv.Session.ID
		p["agent_type"] = inv.Session.AgentName
		p["session_id"] = b.root(ctx, inv)
	}
	return p
}

// root finds the root session of inv's session through the store.
func (b *Bridge) root(ctx context.Context, inv *spawn.Invocation) string {
	id := inv.Session.ID
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
