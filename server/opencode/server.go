package opencode

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/agentpool/agentpool/approval"
	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/pool"
	"github.com/agentpool/agentpool/server/httpsec"
	"github.com/agentpool/agentpool/server/opencode/internal/wire"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/sessiontree"
)

// Defaults of Options.
const (
	DefaultMaxBodyBytes = 8 << 20
	DefaultWriteTimeout = time.Minute
	DefaultMaxSessions  = 1000
	DefaultHeartbeat    = 10 * time.Second
	// DefaultFlushInterval lets the deltas of many sessions share the
	// writes of an event stream: one write per few deltas took the
	// 2-core machine's CPU at 1,000 streaming sessions (BENCHMARKS.md,
	// issue 32 item 4).
	DefaultFlushInterval = 10 * time.Millisecond
	// DefaultAbortWait bounds how long POST /session/{id}/abort waits for
	// the run to wind down before it answers.
	DefaultAbortWait   = 10 * time.Second
	DefaultBodyTimeout = httpsec.DefaultBodyTimeout
	DefaultMaxConns    = httpsec.DefaultMaxConns
	// DefaultMaxSessionPrompts bounds the prompts one session holds: its
	// running one, those waiting behind it and those being received.
	DefaultMaxSessionPrompts = 16
	// DefaultMaxSessionPromptBytes bounds the bytes (of their request
	// bodies) the prompts of one session hold: two bodies of the most
	// MaxBodyBytes allows.
	DefaultMaxSessionPromptBytes = 2 * DefaultMaxBodyBytes
	// DefaultMaxPrompts and DefaultMaxPromptBytes bound the same over
	// all the server's sessions.
	DefaultMaxPrompts     = 1024
	DefaultMaxPromptBytes = 64 << 20
)

// MetadataDirectory is the session metadata key that records the
// directory (?directory= or the x-opencode-directory header) a session was
// created in. Children inherit their parent's directory.
const MetadataDirectory = "opencode_directory"

// Options configure a Server.
type Options struct {
	Logger *slog.Logger
	// Directory is the directory of sessions that name none (the server's
	// working directory when empty).
	Directory string
	// Version is reported by /global/health and in every session.
	Version string
	// QueueSize bounds the events waiting for one slow SSE client before
	// deltas are coalesced (DefaultQueueSize); a client that falls 16
	// times as far behind is disconnected.
	QueueSize int
	// MaxBodyBytes bounds a request body (DefaultMaxBodyBytes).
	MaxBodyBytes int64
	// WriteTimeout bounds one write to an SSE client (DefaultWriteTimeout;
	// up to an eighth more: the deadline is moved once per eighth of it,
	// not per write).
	WriteTimeout time.Duration
	// Heartbeat is the interval of SSE comment lines on an idle stream
	// (DefaultHeartbeat).
	Heartbeat time.Duration
	// FlushInterval is the least time between two writes to one event
	// stream (DefaultFlushInterval): the events published in between go
	// out together at its end, in one write and one flush. The first
	// event after a quieter spell goes out at once. Negative: every
	// batch is written as soon as the stream takes it.
	FlushInterval time.Duration
	// MaxSessions bounds the sessions whose messages are kept in memory
	// (DefaultMaxSessions); older ones are read back from the store.
	MaxSessions int
	// Token, when set, is required on every request as "Authorization:
	// Bearer <token>" (401 otherwise); Serve refuses a non-loopback
	// listener without one. See package httpsec.
	Token string
	// CORSOrigins are the browser origins allowed to call the server ("*":
	// any). None by default: no CORS headers, cross-origin requests get 403.
	CORSOrigins []string
	// BodyTimeout bounds reading a request, body included
	// (DefaultBodyTimeout); a client that takes longer gets 408 and is
	// disconnected. Event streams are not bounded by it.
	BodyTimeout time.Duration
	// MaxConns bounds the connections Serve holds at once
	// (DefaultMaxConns); more wait until one closes.
	MaxConns int
	// The prompt budget: a prompt counts from before its body is read to
	// the end of its run (running, waiting, being received), weighing its
	// body's size. MaxSessionPrompts and MaxSessionPromptBytes bound one
	// session's prompts (DefaultMaxSessionPrompts,
	// DefaultMaxSessionPromptBytes), MaxPrompts and MaxPromptBytes the
	// server's (DefaultMaxPrompts, DefaultMaxPromptBytes). A prompt past a
	// bound is refused with 429, or 413 when it alone is larger than a byte
	// bound, before its body is read when its Content-Length says so.
	MaxSessionPrompts     int
	MaxSessionPromptBytes int
	MaxPrompts            int
	MaxPromptBytes        int
	// UI, when set, is a web front end served beside the API (package
	// server/web): the requests it Serves go to it, every other request
	// is the API's as without it. Its requests pass the Host and origin
	// checks but not the token check: the page and its assets hold no
	// data, and the page sends the token on each API call it makes.
	UI UI
	// Approvals, when set, is the broker of the pool's approval requests
	// (hook.Registry.UseBroker): the server attaches to it for its life,
	// publishes permission.asked and permission.replied, lists the pending
	// requests on GET /permission and takes the replies. Without it GET
	// /permission is [] and replies get 404.
	Approvals *approval.Broker
}

// UI is a web front end that Options.UI mounts beside the API.
type UI interface {
	http.Handler
	// Serves reports whether the UI answers r (its page and assets, for
	// GET and HEAD): the paths it answers are taken from the API, which
	// keeps every other path and its 404.
	Serves(r *http.Request) bool
}

// Server serves a pool over the OpenCode server API. It implements
// http.Handler. Close it when done.
//
// Its work is split by concern (doc.go, Concurrency): the route groups
// sessionsAPI, historyAPI, promptsAPI, eventStreams, configAPI and
// instanceAPI, the
// eventMapper that turns the projection's changes into bus events, and
// the shared state they reach through base (per-session state in
// sessionFacts, the prompt budget, the event hub), each guarded by its
// own lock. The server holds no lock over all sessions.
type Server struct {
	*base
	routes  []*route
	mux     *http.ServeMux
	handler http.Handler // mux behind the token and CORS checks (httpsec)

	sessions *sessionsAPI
	commands *commandsAPI
	instance *instanceAPI
	config   *configAPI
	mapper   *eventMapper
	perms    *permissionsAPI

	// The server watches the session tree of the pool's runs (from New
	// on) and maps it to bus events (eventMapper.onChanges).
	unwatch func()
	unsub   func()
	detach  func()       // from Options.Approvals
	foreign *foreignRuns // runs of other processes on the store (foreign.go)
	closed  sync.Once
}

// New builds a Server for p, with its own projection of the runs p's
// processor records from now on.
func New(p *pool.Pool, opts Options) *Server {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Directory == "" {
		if wd, err := os.Getwd(); err == nil {
			opts.Directory = wd
		} else {
			opts.Directory = "/"
		}
	}
	if opts.Version == "" {
		opts.Version = "dev"
	}
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if opts.WriteTimeout <= 0 {
		opts.WriteTimeout = DefaultWriteTimeout
	}
	if opts.Heartbeat <= 0 {
		opts.Heartbeat = DefaultHeartbeat
	}
	if opts.FlushInterval == 0 {
		opts.FlushInterval = DefaultFlushInterval
	}
	if opts.MaxSessions <= 0 {
		opts.MaxSessions = DefaultMaxSessions
	}
	if opts.BodyTimeout <= 0 {
		opts.BodyTimeout = DefaultBodyTimeout
	}
	if opts.MaxSessionPrompts <= 0 {
		opts.MaxSessionPrompts = DefaultMaxSessionPrompts
	}
	if opts.MaxSessionPromptBytes <= 0 {
		opts.MaxSessionPromptBytes = DefaultMaxSessionPromptBytes
	}
	if opts.MaxPrompts <= 0 {
		opts.MaxPrompts = DefaultMaxPrompts
	}
	if opts.MaxPromptBytes <= 0 {
		opts.MaxPromptBytes = DefaultMaxPromptBytes
	}
	b := &base{
		pool: p, store: p.Store(), opts: opts, log: opts.Logger, dir: opts.Directory, started: time.Now(),
		models: nodeModels(p), hub: newHub(opts.QueueSize), facts: newSessionFacts(opts.MaxSessions),
	}
	b.budget = newPromptBudget(&b.opts)
	if ws := p.Workspace(); ws != nil {
		b.root = ws.Root()
	}
	b.runs, b.stopRuns = context.WithCancel(context.Background())
	b.prompts = &promptsAPI{b}
	b.history = &historyAPI{b}
	b.streams = &eventStreams{b}
	s := &Server{base: b, mux: http.NewServeMux(),
		sessions: &sessionsAPI{b}, instance: &instanceAPI{b}, config: &configAPI{b}, mapper: &eventMapper{b}, commands: &commandsAPI{b},
		perms: &permissionsAPI{base: b, broker: opts.Approvals, shownOn: map[string]string{}}}
	s.routes = s.routeTable()
	for _, rt := range s.routes {
		s.mux.Handle(rt.method+" "+rt.path, s.wrap(rt.handler))
	}
	s.mux.Handle("/", s.wrap(s.handleNoRoute))
	s.handler = s.secured(s.security())
	s.proj = sessiontree.NewProjection(p.Processor().Store(), opts.Logger)
	s.unsub = s.proj.SubscribeRuns(s.mapper.forRun)
	s.foreign = startForeign(b, s.mapper)
	s.unwatch = p.Processor().Watch(localRuns{next: s.proj, f: s.foreign})
	s.detach = func() {}
	if opts.Approvals != nil {
		s.detach = opts.Approvals.Attach(frontEnd, s.perms.onNotice)
	}
	return s
}

func (s *Server) security() httpsec.Options {
	return httpsec.Options{Token: s.opts.Token, CORSOrigins: s.opts.CORSOrigins}
}

// secured is the API behind the checks of opts and, with Options.UI, the
// UI's requests behind the same checks except the token.
func (s *Server) secured(opts httpsec.Options) http.Handler {
	api := httpsec.Handler(s.mux, opts)
	if s.opts.UI == nil {
		return api
	}
	uiOpts := opts
	uiOpts.Token = ""
	ui := httpsec.Handler(s.opts.UI, uiOpts)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.opts.UI.Serves(r) {
			ui.ServeHTTP(w, r)
			return
		}
		api.ServeHTTP(w, r)
	})
}

// ServeHTTP implements http.Handler: every route behind the token and CORS
// checks of package httpsec.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.handler.ServeHTTP(w, r) }

// Close cancels the runs in flight and waits for them, ends every event
// stream and stops watching the processor. It is idempotent.
func (s *Server) Close() {
	s.closed.Do(func() {
		s.stopRuns()
		s.foreign.close()
		s.gate.close()
		s.detach()
		s.hub.close()
		s.unwatch()
		s.unsub()
	})
}

// Serve serves on ln until ctx ends, then closes the server (runs are
// cancelled and their blocking prompts answered, event streams end) and
// shuts down: requests in flight finish (up to 10 s), idle and
// never-used connections are closed at once.
//
// It refuses a listener on a non-loopback address when no Token is set;
// on loopback without a token it answers only requests for a loopback
// Host (DNS rebinding). It holds at most MaxConns connections, and a
// request must arrive within BodyTimeout (see httpsec.NewServer).
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	if err := httpsec.CheckListener(ln, s.opts.Token); err != nil {
		s.Close()
		return err
	}
	var (
		connMu sync.Mutex
		active = map[net.Conn]bool{}
	)
	h := s.secured(httpsec.WithListener(s.security(), ln))
	hs := httpsec.NewServer(h, s.opts.BodyTimeout, slog.NewLogLogger(s.log.Handler(), slog.LevelWarn))
	hs.ConnState = func(c net.Conn, st http.ConnState) {
		connMu.Lock()
		defer connMu.Unlock()
		if st == http.StateActive {
			active[c] = true
		} else {
			delete(active, c)
		}
	}
	ln = httpsec.LimitListener(ln, s.opts.MaxConns)
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		s.Close()
		return err
	case <-ctx.Done():
	}
	s.Close()
	hs.SetKeepAlivesEnabled(false)
	shutdown := make(chan error, 1)
	go func() { shutdown <- hs.Shutdown(context.Background()) }()
	// Shutdown waits for connections that never sent a request for up to
	// 5 s; only requests in flight are worth waiting for.
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		connMu.Lock()
		n := len(active)
		connMu.Unlock()
		if n == 0 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	closeErr := hs.Close()
	err := <-shutdown
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	if serveErr := <-errc; !errors.Is(serveErr, http.ErrServerClosed) && err == nil {
		err = serveErr
	}
	if err == nil {
		err = closeErr
	}
	return err
}

// wrap adds what every route shares: the body size limit and a recover
// that answers 500 and keeps the server serving.
func (s *Server) wrap(h http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				s.log.Error("opencode: handler panicked", "method", r.Method, "path", r.URL.Path, "panic", v, "stack", string(debug.Stack()))
				writeJSON(w, http.StatusInternalServerError, wire.UnknownError{Name: "UnknownError", Data: wire.ErrorData{Message: fmt.Sprintf("internal error: %v", v)}})
			}
		}()
		if r.Body != nil {
			r.Body = http.MaxBytesReader(w, r.Body, s.opts.MaxBodyBytes)
		}
		w.Header().Set("X-Content-Type-Options", "nosniff")
		h(w, r)
	})
}

// handleNoRoute answers paths no route serves: 405 when another method
// would, else 404.
func (s *Server) handleNoRoute(w http.ResponseWriter, r *http.Request) {
	var allow []string
	for _, rt := range s.routes {
		if pathMatches(rt.path, r.URL.Path) {
			allow = append(allow, rt.method)
		}
	}
	if len(allow) > 0 {
		w.Header().Set("Allow", strings.Join(allow, ", "))
		writeJSON(w, http.StatusMethodNotAllowed, wire.BadRequestError{Name: "BadRequest", Data: wire.BadRequestData{
			Message: fmt.Sprintf("method %s not allowed on %s; use %s", r.Method, r.URL.Path, strings.Join(allow, ", ")), Kind: "Params"}})
		return
	}
	writeJSON(w, http.StatusNotFound, wire.NotFoundError{Name: "NotFoundError", Data: wire.ErrorData{Message: fmt.Sprintf("No such route: %s %s", r.Method, r.URL.Path)}})
}

// pathMatches reports whether path matches a route pattern with {name}
// segments.
func pathMatches(pattern, path string) bool {
	ps, xs := strings.Split(strings.Trim(pattern, "/"), "/"), strings.Split(strings.Trim(path, "/"), "/")
	if len(ps) != len(xs) {
		return false
	}
	for i, p := range ps {
		if strings.HasPrefix(p, "{") || p == xs[i] {
			continue
		}
		return false
	}
	return true
}

// requestDir is the directory a request names: ?directory=, else the
// x-opencode-directory header (URI-encoded, as the SDK sends it), else "".
func requestDir(r *http.Request) string {
	if d := r.URL.Query().Get("directory"); d != "" {
		return filepath.Clean(d)
	}
	if h := r.Header.Get("x-opencode-directory"); h != "" {
		if d, err := url.PathUnescape(h); err == nil {
			h = d
		}
		return filepath.Clean(h)
	}
	return ""
}

// projectID is the stable id of a directory's project.
func projectID(dir string) string {
	sum := sha1.Sum([]byte(dir))
	return hex.EncodeToString(sum[:])
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		b = []byte(`{"name":"UnknownError","data":{"message":"encode response"}}`)
	}
	writeRaw(w, status, b)
}

func writeRaw(w http.ResponseWriter, status int, b []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(b)
}

func notFound(w http.ResponseWriter, sid string) {
	writeJSON(w, http.StatusNotFound, wire.NotFoundError{Name: "NotFoundError", Data: wire.ErrorData{Message: "Session not found: " + sid}})
}

func badRequest(w http.ResponseWriter, kind, format string, args ...any) {
	writeJSON(w, http.StatusBadRequest, wire.BadRequestError{Name: "BadRequest", Data: wire.BadRequestData{Message: fmt.Sprintf(format, args...), Kind: kind}})
}

func internalError(w http.ResponseWriter, err error) {
	writeJSON(w, http.StatusInternalServerError, wire.UnknownError{Name: "UnknownError", Data: wire.ErrorData{Message: err.Error()}})
}

// storeError answers a store error: 404 for an unknown session, else 500.
func storeError(w http.ResponseWriter, sid string, err error) {
	if errors.Is(err, session.ErrNotFound) {
		notFound(w, sid)
		return
	}
	internalError(w, err)
}

// nodeModels maps every node of the pool to the model it runs on: the
// provider is the manifest's model type (test and scripted models are the
// "agentpool" provider); teams run on no model of their own.
func nodeModels(p *pool.Pool) map[string]wire.ModelRef {
	out := map[string]wire.ModelRef{}
	m := p.Manifest()
	for _, name := range p.NodeNames() {
		n, ok := p.Node(name)
		if !ok {
			continue
		}
		a, isAgent := m.Agents[name]
		if !isAgent {
			out[name] = wire.ModelRef{ProviderID: providerAgentPool, ModelID: string(n.SourceType())}
			continue
		}
		ref := wire.ModelRef{ProviderID: providerOf(a.Model.Type), ModelID: n.ModelID()}
		if ref.ModelID == "" {
			ref.ModelID = a.Model.Model
		}
		if ref.ModelID == "" {
			ref.ModelID = a.Model.Type
		}
		out[name] = ref
	}
	return out
}

// providerAgentPool is the provider id of the offline test models and of
// teams.
const providerAgentPool = "agentpool"

func providerOf(modelType string) string {
	switch modelType {
	case config.ModelOpenAI, config.ModelAnthropic:
		return modelType
	}
	return providerAgentPool
}

// modelOf returns the model of a node (the default node's when the name is
// unknown, as for sessions of other pools).
func (s *base) modelOf(node string) wire.ModelRef {
	if m, ok := s.models[node]; ok {
		return m
	}
	if m, ok := s.models[s.pool.DefaultNode()]; ok {
		return m
	}
	return wire.ModelRef{ProviderID: providerAgentPool, ModelID: "unknown"}
}
