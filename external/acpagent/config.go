package acpagent

import (
	"errors"
	"fmt"
	"log/slog"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/agentpool/agentpool/config"
)

// Defaults of Config's durations.
const (
	// DefaultInitTimeout bounds starting the agent and its initialize:
	// a Node.js agent on a loaded machine takes 10 to 20 s.
	DefaultInitTimeout = 90 * time.Second
	// DefaultCancelGrace is how long a cancelled prompt may take to
	// answer session/cancel before the agent is killed.
	DefaultCancelGrace = 5 * time.Second
)

// Confirmation is requires_tool_confirmation: who grants the agent's
// session/request_permission.
type Confirmation string

// The values of requires_tool_confirmation.
const (
	// ConfirmAlways: every permission request reaches the approval flow
	// (the default), and so do the agent's file writes.
	ConfirmAlways Confirmation = "always"
	// ConfirmPerTool: permission requests reach the approval flow; the
	// file operations follow the member's tool_approval.
	ConfirmPerTool Confirmation = "per_tool"
	// ConfirmNever: permission requests are granted (allow once) without
	// asking anyone.
	ConfirmNever Confirmation = "never"
)

// Config describes one external agent: the program to start and what it
// may do through us.
type Config struct {
	Name        string // the member's name: a node name of the pool
	Description string
	// Command and Args start the agent, which speaks ACP on stdin and
	// stdout; Command is looked up in PATH when it has no slash.
	Command string
	Args    []string
	// Env is added to agentpool's environment for the agent's process.
	Env map[string]string
	// Dir is the agent's working directory and the cwd of its sessions
	// (session/new requires an absolute one); empty: the current one.
	Dir string
	// SystemPrompt comes before the first prompt of each session, as
	// context: ACP has no system prompt of its own.
	SystemPrompt string
	// AllowFileOperations offers the agent fs/read_text_file and
	// fs/write_text_file, served by our confined file tools in Dir;
	// AllowTerminal offers terminal/*, served by our Bash tool in Dir
	// (background shells, each a process tree killed at the end of the
	// delegation).
	AllowFileOperations bool
	AllowTerminal       bool
	Confirm             Confirmation // "" is ConfirmAlways
	// MCPServers are passed to the agent in session/new, for it to start
	// or reach (those whose transport its initialize does not offer are
	// left out, with a toolset_error event); none may be named ServedName.
	MCPServers []config.MCPServer
	// Relay is the command line (program and arguments) of a relay of
	// stdio MCP to the URL in the environment variable mcprelay.EnvURL
	// (`agentpool mcp-relay`): an agent whose initialize offers no MCP
	// over HTTP is given the member's tools as a stdio MCP server that
	// runs it. Empty: such an agent is served nothing (a toolset_error
	// event).
	Relay []string
	// InstallHint says how to install Command, for the error when it is
	// missing ("npm install -g opencode-ai").
	InstallHint string
	InitTimeout time.Duration // 0: DefaultInitTimeout
	CancelGrace time.Duration // 0: DefaultCancelGrace
	Logger      *slog.Logger  // nil: discard
}

// ErrNoCommand is the error of a Config whose command is not installed.
var ErrNoCommand = errors.New("the agent's command is not installed")

// check validates cfg and fills its defaults; the command must be found.
func (cfg *Config) check() error {
	if cfg.Name == "" {
		return errors.New("acpagent: Config.Name is required")
	}
	if cfg.Command == "" {
		return fmt.Errorf("acpagent: agent %s: Config.Command is required", cfg.Name)
	}
	if _, err := exec.LookPath(cfg.Command); err != nil {
		hint := ""
		if cfg.InstallHint != "" {
			hint = "; install it with: " + cfg.InstallHint
		}
		return fmt.Errorf("%w: %q is not in PATH%s", ErrNoCommand, cfg.Command, hint)
	}
	switch cfg.Confirm {
	case "":
		cfg.Confirm = ConfirmAlways
	case ConfirmAlways, ConfirmPerTool, ConfirmNever:
	default:
		return fmt.Errorf("acpagent: agent %s: unknown Confirm %q (always, per_tool or never)", cfg.Name, cfg.Confirm)
	}
	for _, s := range cfg.MCPServers {
		if s.Name == ServedName {
			return fmt.Errorf("acpagent: agent %s: MCP server %q: the name is agentpool's own (the server of the member's tools); rename it", cfg.Name, s.Name)
		}
	}
	if cfg.Dir == "" {
		cfg.Dir = "."
	}
	dir, err := filepath.Abs(cfg.Dir)
	if err != nil {
		return fmt.Errorf("acpagent: agent %s: %w", cfg.Name, err)
	}
	cfg.Dir = dir
	if cfg.InitTimeout <= 0 {
		cfg.InitTimeout = DefaultInitTimeout
	}
	if cfg.CancelGrace <= 0 {
		cfg.CancelGrace = DefaultCancelGrace
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}
