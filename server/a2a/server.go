package a2a

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/a2aproject/a2a-go/a2asrv"
	"github.com/a2aproject/a2a-go/a2asrv/limiter"

	"github.com/agentpool/agentpool/pool"
	"github.com/agentpool/agentpool/server/httpsec"
)

// Defaults of Options.
const (
	DefaultMaxBodyBytes = 4 << 20
	DefaultMaxTasks     = 10000
	DefaultMaxContexts  = 10000
	DefaultMaxRuns      = 64
	DefaultQueueSize    = 1024
	DefaultBodyTimeout  = httpsec.DefaultBodyTimeout
	DefaultMaxConns     = httpsec.DefaultMaxConns
)

// Options configure a Server.
type Options struct {
	Logger *slog.Logger
	// Token, when set, is required on every request but the agent cards
	// as "Authorization: Bearer <token>"; Serve refuses a non-loopback
	// listener without one (package httpsec).
	Token string
	// CORSOrigins are the browser origins allowed to call the server.
	CORSOrigins []string
	// BaseURL is the server's address as its clients reach it
	// ("https://agents.example.com"), for the cards' url; empty: the
	// scheme and Host of the request that asks for the card.
	BaseURL string
	// Version is the agents' version in their cards ("dev" when empty).
	Version string
	// MaxBodyBytes bounds a request body (DefaultMaxBodyBytes).
	MaxBodyBytes int64
	// MaxTasks bounds the tasks kept for tasks/get (DefaultMaxTasks).
	MaxTasks int
	// MaxContexts bounds the contextId → session pairs kept
	// (DefaultMaxContexts); a forgotten context starts a new session.
	MaxContexts int
	// MaxRuns bounds the tasks that run at once, per agent
	// (DefaultMaxRuns); more are refused.
	MaxRuns int
	// QueueSize bounds the events of one task that wait for the SDK's
	// event queue (DefaultQueueSize).
	QueueSize int
	// BodyTimeout bounds reading a request (DefaultBodyTimeout).
	BodyTimeout time.Duration
	// MaxConns bounds the connections Serve holds at once (DefaultMaxConns).
	MaxConns int
}

// Server serves a pool over A2A. It implements http.Handler.
type Server struct {
	pool     *pool.Pool
	opts     Options
	log      *slog.Logger
	mux      *http.ServeMux
	agents   map[string]http.Handler // node name → JSON-RPC handler
	tasks    *taskStore
	contexts *contexts
	// runs is the parent of every task's run: it ends when the server
	// closes.
	runs      context.Context
	stopRuns  context.CancelFunc
	closeOnce sync.Once
	mu        sync.Mutex     // orders begin (wg.Add) before Close's wait
	wg        sync.WaitGroup // the runs
	// running maps the tasks that run to their sessions, for
	// tasks/cancel.
	running sync.Map // a2a.TaskID → session id
}

// New builds a Server for p: one A2A agent per node of the pool.
func New(p *pool.Pool, opts Options) *Server {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if opts.MaxTasks <= 0 {
		opts.MaxTasks = DefaultMaxTasks
	}
	if opts.MaxContexts <= 0 {
		opts.MaxContexts = DefaultMaxContexts
	}
	if opts.MaxRuns <= 0 {
		opts.MaxRuns = DefaultMaxRuns
	}
	if opts.QueueSize <= 0 {
		opts.QueueSize = DefaultQueueSize
	}
	if opts.BodyTimeout <= 0 {
		opts.BodyTimeout = DefaultBodyTimeout
	}
	if opts.MaxConns <= 0 {
		opts.MaxConns = DefaultMaxConns
	}
	if opts.Version == "" {
		opts.Version = "dev"
	}
	s := &Server{pool: p, opts: opts, log: opts.Logger, mux: http.NewServeMux(), agents: map[string]http.Handler{},
		tasks: newTaskStore(opts.MaxTasks), contexts: newContexts(opts.MaxContexts)}
	s.runs, s.stopRuns = context.WithCancel(context.Background())
	for _, name := range p.NodeNames() {
		h := a2asrv.NewHandler(&executor{s: s, node: name},
			a2asrv.WithTaskStore(s.tasks),
			a2asrv.WithLogger(s.log),
			a2asrv.WithConcurrencyConfig(limiter.ConcurrencyConfig{MaxExecutions: opts.MaxRuns}))
		s.agents[name] = a2asrv.NewJSONRPCHandler(h)
	}
	s.mux.HandleFunc("POST /{$}", func(w http.ResponseWriter, r *http.Request) { s.serveRPC(w, r, "") })
	s.mux.HandleFunc("POST /agents/{name}", func(w http.ResponseWriter, r *http.Request) { s.serveRPC(w, r, r.PathValue("name")) })
	s.mux.HandleFunc("GET "+a2asrv.WellKnownAgentCardPath, func(w http.ResponseWriter, r *http.Request) { s.serveCard(w, r, "") })
	s.mux.HandleFunc("GET /agents/{name}"+a2asrv.WellKnownAgentCardPath, func(w http.ResponseWriter, r *http.Request) {
		s.serveCard(w, r, r.PathValue("name"))
	})
	s.mux.HandleFunc("GET /agents", s.serveAgents)
	s.mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": fmt.Sprintf("no such endpoint: %s %s (try POST / or /agents/{name} with A2A JSON-RPC, "+
			"GET /.well-known/agent-card.json, GET /agents/{name}/.well-known/agent-card.json, GET /agents)", r.Method, r.URL.Path)})
	})
	return s
}

// handler is the mux behind the checks of package httpsec.
func (s *Server) handler(ln net.Listener) http.Handler {
	open := httpsec.Options{CORSOrigins: s.opts.CORSOrigins}
	closed := httpsec.Options{Token: s.opts.Token, CORSOrigins: s.opts.CORSOrigins}
	if ln != nil {
		open, closed = httpsec.WithListener(open, ln), httpsec.WithListener(closed, ln)
	}
	public, private := httpsec.Handler(s.mux, open), httpsec.Handler(s.mux, closed)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, a2asrv.WellKnownAgentCardPath) {
			public.ServeHTTP(w, r)
			return
		}
		private.ServeHTTP(w, r)
	})
}

// ServeHTTP implements http.Handler: every route behind the token and CORS
// checks of package httpsec (the cards without the token).
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.handler(nil).ServeHTTP(w, r) }

// Close cancels every run (their tasks end canceled) and waits for them.
// Serve calls it; a server used as a plain http.Handler calls it when it
// is done.
func (s *Server) Close() {
	s.mu.Lock()
	s.closeOnce.Do(s.stopRuns)
	s.mu.Unlock()
	s.wg.Wait()
}

// Serve serves on ln until ctx ends, then cancels the runs and shuts down.
// It refuses a listener on a non-loopback address when no Token is set.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	if err := httpsec.CheckListener(ln, s.opts.Token); err != nil {
		return err
	}
	hs := httpsec.NewServer(s.handler(ln), s.opts.BodyTimeout, slog.NewLogLogger(s.log.Handler(), slog.LevelWarn))
	ln = httpsec.LimitListener(ln, s.opts.MaxConns)
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		s.Close()
		return err
	case <-ctx.Done():
	}
	s.mu.Lock()
	s.closeOnce.Do(s.stopRuns)
	s.mu.Unlock()
	shutCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := hs.Shutdown(shutCtx)
	if serveErr := <-errc; !errors.Is(serveErr, http.ErrServerClosed) && err == nil {
		err = serveErr
	}
	s.Close()
	return err
}

// serveRPC hands a JSON-RPC request to the agent's SDK handler, its body
// bounded.
func (s *Server) serveRPC(w http.ResponseWriter, r *http.Request, name string) {
	if name == "" {
		name = s.pool.DefaultNode()
	}
	h, ok := s.agents[name]
	if !ok {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": fmt.Sprintf("unknown agent %q; available: %s", name, strings.Join(s.pool.NodeNames(), ", "))})
		return
	}
	if r.ContentLength > s.opts.MaxBodyBytes {
		writeJSON(w, http.StatusRequestEntityTooLarge, map[string]string{"error": fmt.Sprintf("request body larger than %d bytes", s.opts.MaxBodyBytes)})
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, s.opts.MaxBodyBytes)
	h.ServeHTTP(w, r)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
