package a2aagent

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"time"
)

// Defaults of Config.
const (
	// DefaultCancelGrace bounds the tasks/cancel a cancelled delegation
	// sends.
	DefaultCancelGrace = 10 * time.Second
	// DefaultMaxOutputBytes bounds the answer a delegation keeps.
	DefaultMaxOutputBytes = 1 << 20
)

// Config describes one remote A2A agent.
type Config struct {
	Name        string // the member's name: a node name of the pool
	Description string // "" : the card's
	// URL is the agent's base URL (its card at URL +
	// /.well-known/agent-card.json) or the URL of its card (ending in
	// .json). The card's url is where the JSON-RPC requests go.
	URL string
	// Headers are sent with every request (the card's too): the
	// authentication header, read from the environment by the caller.
	Headers map[string]string
	// HTTPClient makes the requests (nil: one without a timeout: a
	// delegation lasts as long as the remote task; the spawn timeout and
	// cancellation bound it).
	HTTPClient *http.Client
	// CancelGrace bounds the tasks/cancel of a cancelled delegation
	// (DefaultCancelGrace).
	CancelGrace time.Duration
	// MaxOutputBytes bounds the answer kept (DefaultMaxOutputBytes); the
	// rest is cut, with a note.
	MaxOutputBytes int
	Logger         *slog.Logger // nil: discard
}

func (cfg *Config) check() error {
	if cfg.Name == "" {
		return errors.New("a2aagent: Config.Name is required")
	}
	if cfg.URL == "" {
		return fmt.Errorf("a2aagent: agent %s: Config.URL is required", cfg.Name)
	}
	u, err := url.Parse(cfg.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("a2aagent: agent %s: url %q is not an http or https URL", cfg.Name, cfg.URL)
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{}
	}
	if cfg.CancelGrace <= 0 {
		cfg.CancelGrace = DefaultCancelGrace
	}
	if cfg.MaxOutputBytes <= 0 {
		cfg.MaxOutputBytes = DefaultMaxOutputBytes
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}
