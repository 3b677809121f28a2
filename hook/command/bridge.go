package command

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/hook"
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
	HookEvent string   `json:"hook_event"` // PreToolUse, Stop, ...
	Command   string   `json:"command"`    // as configured
	Args      []string `json:"args,omitempty"`
	Matcher   string   `json:"matcher,omitempty"`
	// Decision is none, allow, ask, deny, block, stop (continue: false),
	// error (a non-blocking error) or timeout.
	Decision          string `json:"decision"`
	DurationMS        int64  `json:"duration_ms"`
	ExitCode          int    `json:"exit_code"` // -1 when it did not exit (killed, not started)
	Async             bool   `json:"async,omitempty"`
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
	// PermissionMode, when set, is the payload's permission_mode for every
	// agent; by default it follows the agent's tool_approval policy
	// (bypassPermissions, acceptEdits or default).
	PermissionMode string
	// MaxStopBlocks is the loop guard (DefaultMaxStopBlocks when 0).
	MaxStopBlocks int
	// Shell runs the commands as Shell -c COMMAND (/bin/sh).
	Shell string
	// TranscriptDir is where the sessions' transcripts are written
	// (transcript_path). Empty: a temporary directory, made when a hook
	// first needs it and removed when the registry closes.
	TranscriptDir string
}

// Bridge runs command hooks of the Claude Code / Codex settings format at
// the hook points of a hook.Registry.
type Bridge struct {
	opts   Options
	log    *slog.Logger
	events map[string][]group
	reg    *hook.Registry // set by Register: the agents' tool_approval (permission_mode)
	tr     *transcripts
	async  asyncHooks

	// mu guards blocks, stopped and teamRuns (events is set before any
	// hook runs). One lock: a child's end reads and clears its blocks and
	// stopped together, and all three change at turn stops and subagent
	// ends, a few times per session, never per streamed event.
	mu       sync.Mutex
	blocks   map[string]int  // session id -> consecutive Stop/SubagentStop blocks
	stopped  map[string]bool // child session id -> its SubagentStop let it stop
	teamRuns map[string][]teamTurn
	roots    sync.Map // session id -> root session id
}

type group struct {
	matcher string
	m       matcher
	hooks   []handler
}

type handler struct {
	command    string
	args       []string // nil: a shell command
	timeout    time.Duration
	async      bool
	source     string
	pluginRoot string
}

// key identifies a hook's command: identical ones of one event run once.
func (h handler) key() string {
	if h.args == nil {
		return h.command
	}
	return h.command + "\x00" + strings.Join(h.args, "\x00")
}

// New compiles settings into a bridge and logs, once, what the settings
// hold that is not applied (Settings.Ignored).
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
	if opts.MaxStopBlocks <= 0 {
		opts.MaxStopBlocks = DefaultMaxStopBlocks
	}
	if opts.Shell == "" {
		opts.Shell = defaultShell
	}
	b := &Bridge{opts: opts, log: opts.Logger, events: map[string][]group{},
		blocks: map[string]int{}, stopped: map[string]bool{}, teamRuns: map[string][]teamTurn{}}
	b.tr = newTranscripts(opts.TranscriptDir, opts.ProjectDir, b.log)
	b.async.init()
	for _, line := range s.Ignored {
		b.log.Warn("hook settings: " + line)
	}
	for ev, gs := range s.Hooks {
		for i, g := range gs {
			m, err := compileMatcher(g.Matcher)
			if err != nil {
				return nil, fmt.Errorf("%s: hooks.%s[%d].matcher: invalid regular expression %q: %v", g.Source, ev, i, g.Matcher, err)
			}
			cg := group{matcher: g.Matcher, m: m}
			for _, h := range g.Hooks {
				if h.Type != "command" || strings.TrimSpace(h.Command) == "" {
					continue
				}
				t := DefaultTimeout
				if h.Timeout > 0 {
					t = time.Duration(h.Timeout * float64(time.Second))
				}
				cg.hooks = append(cg.hooks, handler{command: h.Command, args: h.Args, timeout: t, async: h.Async,
					source: g.Source, pluginRoot: g.PluginRoot})
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
// order). The hooks run in the manifest's directory. Close the registry
// when done: it ends background hooks and removes temporary transcripts.
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
// An empty ProjectDir is the manifest's directory. Install a manifest's
// hooks on a registry once: twice runs every hook twice.
func Install(reg *hook.Registry, m *config.Manifest, opts Options) error {
	if opts.ProjectDir == "" {
		opts.ProjectDir = m.Dir()
	}
	reg.Approvals.ApplyManifest(m)
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

func (b *Bridge) hasAny() bool { return len(b.events) > 0 }

// maxTimeout is the longest timeout of event's hooks.
func (b *Bridge) maxTimeout(events ...string) time.Duration {
	var t time.Duration
	for _, ev := range events {
		for _, g := range b.events[ev] {
			for _, h := range g.hooks {
				t = max(t, h.timeout)
			}
		}
	}
	return t
}

// emitGrace is added to an emit listener's timeout so that the hooks' own
// timeouts (which kill them) come first.
const emitGrace = 5 * time.Second

// Register adds the bridge's listeners to reg, for the events that have
// hooks, and makes reg's Close end the bridge (its background hooks, its
// temporary transcripts).
func (b *Bridge) Register(reg *hook.Registry) {
	b.reg = reg
	reg.AddCloser(b.close)
	if !b.hasAny() {
		return
	}
	emitOpts := func(evs ...string) []hook.Option {
		return []hook.Option{hook.WithName("command:" + evs[0]), hook.WithTimeout(b.maxTimeout(evs...) + emitGrace)}
	}
	// Always: they keep the transcripts and the subagent lifecycle (a
	// SubagentStop for every SubagentStart, a team's prompt) and clear the
	// loop guard.
	if b.Has(SessionStart) {
		reg.SetShellEnvFile(b.shellEnvFile)
	}
	reg.OnSessionStart.Register(b.sessionStart, emitOpts(SessionStart)...)
	reg.OnSessionEnd.Register(b.sessionEnd, emitOpts(SessionEnd)...)
	reg.OnSubagentStart.Register(b.subagentStart, emitOpts(SubagentStart)...)
	reg.OnSubagentEnd.Register(b.subagentEnd, emitOpts(SubagentStop)...)
	if b.Has(UserPromptSubmit) {
		reg.OnPromptSubmit.Use(b.promptSubmit, hook.WithName("command:"+UserPromptSubmit))
	}
	if b.Has(PreToolUse) {
		reg.OnPreExecute.Use(b.preToolUse, hook.WithName("command:"+PreToolUse))
	}
	if b.Has(PostToolUse) || b.Has(PostToolUseFailure) {
		reg.OnPostExecute.Use(b.postToolUse, hook.WithName("command:"+PostToolUse))
	}
	if b.Has(Stop) || b.Has(SubagentStop) {
		reg.OnTurnStop.Use(b.turnStop, hook.WithName("command:Stop"))
	}
	if b.Has(PreCompact) {
		reg.OnPreCompact.Register(b.preCompact, emitOpts(PreCompact)...)
	}
	if b.Has(PermissionRequest) || b.Has(Notification) {
		// Ahead of the approvers (an editor, the terminal): the hooks may
		// answer before a human is asked.
		reg.OnApproval.Use(b.permissionRequest, hook.WithName("command:"+PermissionRequest), hook.Early())
	}
}

// close ends the bridge: background hooks still running at ctx's end are
// killed; a temporary transcript directory is removed.
func (b *Bridge) close(ctx context.Context) error {
	b.async.close(ctx)
	return b.tr.close()
}
