package aguiagent

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"time"
)

// DefaultMaxOutputBytes bounds the answer a delegation keeps.
const DefaultMaxOutputBytes = 1 << 20

// Config describes one remote AG-UI agent.
type Config struct {
	Name        string // the member's name: a node name of the pool
	Description string
	// Endpoint is the URL the RunAgentInput is posted to (an agentpool
	// server's /agents/NAME, AgentPool's /agent/run).
	Endpoint string
	// Headers are sent with every request (authentication, read from the
	// environment by the caller).
	Headers map[string]string
	// Timeout bounds a delegation; 0: the spawn timeout and cancellation
	// alone bound it.
	Timeout time.Duration
	// StartupCommand, when set, is a shell command line that starts the
	// server (AgentPool's startup_command), run in Dir by the first
	// delegation and again after it exited; the delegation waits until
	// the endpoint accepts connections (StartupDelay or
	// DefaultStartupTimeout, whichever is longer). Close ends it.
	StartupCommand string
	StartupDelay   time.Duration
	Dir            string
	// HTTPClient makes the requests (nil: one without a timeout).
	HTTPClient *http.Client
	// MaxOutputBytes bounds the answer kept (DefaultMaxOutputBytes); the
	// rest is cut, with a note.
	MaxOutputBytes int
	Logger         *slog.Logger // nil: discard
}

func (cfg *Config) check() error {
	if cfg.Name == "" {
		return errors.New("aguiagent: Config.Name is required")
	}
	u, err := url.Parse(cfg.Endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("aguiagent: agent %s: endpoint %q is not an http or https URL", cfg.Name, cfg.Endpoint)
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{}
	}
	if cfg.MaxOutputBytes <= 0 {
		cfg.MaxOutputBytes = DefaultMaxOutputBytes
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}
