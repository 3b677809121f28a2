package mcp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentpool/agentpool/tool"
)

// Transports.
const (
	TransportStdio          = "stdio"
	TransportSSE            = "sse"
	TransportStreamableHTTP = "streamable-http"
	// TransportCustom is reported for servers reached through
	// ServerConfig.Dial.
	TransportCustom = "custom"
)

// Server states (ServerStatus.State).
const (
	StateNotStarted = "not started"
	StateConnected  = "connected"
	StateFailed     = "failed"
	StateClosed     = "closed"
)

// Defaults.
const (
	DefaultCallTimeout  = 60 * time.Second
	DefaultStartTimeout = 30 * time.Second
)

// ServerConfig describes one MCP server.
type ServerConfig struct {
	// Name identifies the server; it is part of every tool name
	// (mcp__<Name>__<tool>) and must match [A-Za-z0-9_-]+.
	Name string
	// Transport is "stdio" (the default when Command is set), "sse" or
	// "streamable-http" (the default when URL is set; "http" is accepted
	// as an alias).
	Transport string

	// stdio: the command line, extra environment (added to the inherited
	// one) and working directory of the server process.
	Command string
	Args    []string
	Env     map[string]string
	Dir     string

	// sse, streamable-http: the endpoint and extra request headers.
	URL     string
	Headers map[string]string

	// Timeout bounds each tool call; DefaultCallTimeout when zero.
	Timeout time.Duration

	// Dial, when set, makes the transport of each (re)start instead of
	// Command or URL: for tests and for embedding in-process servers
	// (an sdk.InMemoryTransport connected to an sdk.Server). The server's
	// transport is then reported as "custom" unless Transport names one.
	Dial func(ctx context.Context) (sdk.Transport, error)
}

// Options configure a Manager.
type Options struct {
	// Logger receives start, restart and failure messages, and at debug
	// level the stderr lines of stdio servers. Nil discards them.
	Logger *slog.Logger
	// StartTimeout bounds a server start: connect, initialize and list
	// tools. DefaultStartTimeout when zero.
	StartTimeout time.Duration
	// ClientName and ClientVersion are sent to servers in initialize
	// ("agentpool" and "dev" when empty).
	ClientName, ClientVersion string
}

// ServerStatus is a server's state for front ends.
type ServerStatus struct {
	Name      string   `json:"name"`
	Transport string   `json:"transport"`
	State     string   `json:"state"` // StateNotStarted, StateConnected, StateFailed or StateClosed
	Error     string   `json:"error,omitempty"`
	Tools     []string `json:"tools,omitempty"` // agentpool tool names (mcp__server__tool) of the last listing
}

// Manager owns the MCP servers of a configuration: it starts each on first
// use, exposes its tools and stops every server on Close.
type Manager struct {
	opts    Options
	log     *slog.Logger
	servers []*server // configuration order
	byName  map[string]*server

	ctx    context.Context // cancelled by Close: aborts starts and calls
	cancel context.CancelFunc
	wg     sync.WaitGroup // starts, session watchers, background stops

	closeOnce sync.Once
}

// Compiled on first use, not at package init, which every process
// linking the package pays (agentpool version too).
var validName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_-]+$`) })

// NewManager validates the configurations; no server starts here.
func NewManager(servers []ServerConfig, opts Options) (*Manager, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = DefaultStartTimeout
	}
	if opts.ClientName == "" {
		opts.ClientName = "agentpool"
	}
	if opts.ClientVersion == "" {
		opts.ClientVersion = "dev"
	}
	m := &Manager{opts: opts, log: opts.Logger, byName: map[string]*server{}}
	var errs []error
	for i, cfg := range servers {
		cfg, err := normalize(cfg)
		if err != nil {
			errs = append(errs, fmt.Errorf("mcp server %d (%q): %w", i+1, cfg.Name, err))
			continue
		}
		if m.byName[cfg.Name] != nil {
			errs = append(errs, fmt.Errorf("mcp server %q: duplicate name", cfg.Name))
			continue
		}
		s := newServer(m, cfg)
		m.servers = append(m.servers, s)
		m.byName[cfg.Name] = s
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	m.ctx, m.cancel = context.WithCancel(context.Background())
	return m, nil
}

// normalize checks a configuration and fills in its transport and timeout.
func normalize(cfg ServerConfig) (ServerConfig, error) {
	if cfg.Name == "" {
		return cfg, errors.New("name is empty")
	}
	if !validName().MatchString(cfg.Name) {
		return cfg, errors.New("name must match [A-Za-z0-9_-]+")
	}
	if cfg.Timeout < 0 {
		return cfg, errors.New("negative timeout")
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultCallTimeout
	}
	if cfg.Transport == "http" {
		cfg.Transport = TransportStreamableHTTP
	}
	if cfg.Dial != nil {
		if cfg.Transport == "" {
			cfg.Transport = TransportCustom
		}
		return cfg, nil
	}
	if cfg.Transport == "" {
		switch {
		case cfg.Command != "":
			cfg.Transport = TransportStdio
		case cfg.URL != "":
			cfg.Transport = TransportStreamableHTTP
		default:
			return cfg, errors.New("neither command nor url is set")
		}
	}
	switch cfg.Transport {
	case TransportStdio:
		if cfg.Command == "" {
			return cfg, errors.New("stdio transport without a command")
		}
	case TransportSSE, TransportStreamableHTTP:
		if cfg.URL == "" {
			return cfg, fmt.Errorf("%s transport without a url", cfg.Transport)
		}
	default:
		return cfg, fmt.Errorf("unknown transport %q (want stdio, sse or streamable-http)", cfg.Transport)
	}
	return cfg, nil
}

// Toolset returns the named server's toolset. Its Tools starts the server
// on first use.
func (m *Manager) Toolset(name string) (tool.Toolset, bool) {
	s, ok := m.byName[name]
	if !ok {
		return nil, false
	}
	return s, true
}

// Toolsets returns every server's toolset, in configuration order.
func (m *Manager) Toolsets() []tool.Toolset {
	out := make([]tool.Toolset, 0, len(m.servers))
	for _, s := range m.servers {
		out = append(out, s)
	}
	return out
}

// Servers reports every server's state, in configuration order.
func (m *Manager) Servers() []ServerStatus {
	out := make([]ServerStatus, 0, len(m.servers))
	for _, s := range m.servers {
		out = append(out, s.status())
	}
	return out
}

// Close stops every server: in-flight calls end with an error result,
// sessions are closed and every stdio server process and its process
// group are killed (after closing stdin and a short grace). It waits for
// all of it and is safe to call more than once; Tools and calls fail
// afterwards.
func (m *Manager) Close() error {
	m.closeOnce.Do(func() {
		m.cancel()
		var wg sync.WaitGroup
		for _, s := range m.servers {
			wg.Go(s.close)
		}
		wg.Wait()
		m.wg.Wait()
		for _, s := range m.servers {
			if s.httpTransport != nil {
				s.httpTransport.CloseIdleConnections()
			}
		}
	})
	return nil
}
