package agui

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/agentpool/agentpool/server/agui/internal/wire"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/agentpool/agentpool/approval"
	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/internal/otelprop"
	"github.com/agentpool/agentpool/internal/queue"
	"github.com/agentpool/agentpool/pool"
	"github.com/agentpool/agentpool/server/httpsec"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/tracing"
)

// Defaults of Options.
const (
	DefaultMaxBodyBytes = 8 << 20
	DefaultWriteTimeout = time.Minute
	// DefaultFlushInterval lets a stream of deltas (a model's tokens,
	// 20–200 a second) share writes: a system call on each side of the
	// socket per event was most of what a delivered event cost
	// (BENCHMARKS.md, "Paced delivery").
	DefaultFlushInterval = 20 * time.Millisecond
	DefaultBodyTimeout   = httpsec.DefaultBodyTimeout
	DefaultMaxConns      = httpsec.DefaultMaxConns
	DefaultMaxThreads    = 10000
)

// Options configure a Server.
type Options struct {
	Logger *slog.Logger
	// QueueSize bounds the events waiting for a slow client (DefaultQueueSize).
	QueueSize int
	// MaxBodyBytes bounds a request body (DefaultMaxBodyBytes); larger is 413.
	MaxBodyBytes int64
	// WriteTimeout bounds one write to a client (DefaultWriteTimeout). A
	// client that accepts nothing for that long (up to an eighth more:
	// the deadline is moved once per eighth of it, not per write) is
	// treated as gone: its run is cancelled.
	WriteTimeout time.Duration
	// FlushInterval is the least time between two writes to one client
	// (DefaultFlushInterval): the events that come in between go out
	// together at its end, in one write and one flush. The first event
	// after a quieter spell goes out at once. Negative: every event is
	// written as soon as the writer takes it.
	FlushInterval time.Duration
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
	// MaxThreads bounds the thread ids whose session the server keeps in
	// memory (DefaultMaxThreads); the least recently used idle ones are
	// forgotten and found again in the store when they come back.
	MaxThreads int
	// Approvals, when set, is the broker of the pool's approval requests
	// (hook.Registry.UseBroker): the server attaches to it until Close,
	// streams the requests of each run's sessions as CUSTOM approval_asked
	// and approval_replied events, lists them on GET /approvals and takes
	// the answers on POST /approvals/{id}. Without it the list is empty and
	// answers get 404.
	Approvals *approval.Broker

	// now and newID make tests deterministic; onQueue lets a test watch a
	// run's queue.
	now     func() int64
	newID   func(prefix string) string
	onQueue func(q *queue.Queue[item])
}

// Server serves a pool over AG-UI. It implements http.Handler.
type Server struct {
	pool    *pool.Pool
	opts    Options
	log     *slog.Logger
	threads *threads
	states  *threadStates
	mux     *http.ServeMux
	handler http.Handler // mux behind the token and CORS checks
	// runs is the parent of every run's context besides its request: it
	// ends when the server shuts down.
	runs     context.Context
	stopRuns context.CancelFunc
	// approvals is the front end of Options.Approvals (nil without one).
	approvals *approvalsHub
	closeOnce sync.Once
}

// New builds a Server for p.
func New(p *pool.Pool, opts Options) *Server {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.QueueSize <= 0 {
		opts.QueueSize = DefaultQueueSize
	}
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if opts.WriteTimeout <= 0 {
		opts.WriteTimeout = DefaultWriteTimeout
	}
	if opts.FlushInterval == 0 {
		opts.FlushInterval = DefaultFlushInterval
	}
	if opts.BodyTimeout <= 0 {
		opts.BodyTimeout = DefaultBodyTimeout
	}
	if opts.MaxThreads <= 0 {
		opts.MaxThreads = DefaultMaxThreads
	}
	s := &Server{pool: p, opts: opts, log: opts.Logger, threads: newThreads(p.Store(), opts.MaxThreads),
		states: newThreadStates(p.Store()), mux: http.NewServeMux()}
	s.runs, s.stopRuns = context.WithCancel(context.Background())
	if opts.Approvals != nil {
		s.approvals = newApprovalsHub(opts.Approvals, p.Store())
	}
	s.mux.HandleFunc("POST /{$}", func(w http.ResponseWriter, r *http.Request) { s.handleRun(w, r, "") })
	s.mux.HandleFunc("POST /agents/{name}", func(w http.ResponseWriter, r *http.Request) { s.handleRun(w, r, r.PathValue("name")) })
	s.mux.HandleFunc("GET /agents", s.handleAgents)
	s.mux.HandleFunc("GET /healthz", s.handleHealth)
	s.mux.HandleFunc("GET /approvals", s.handleApprovals)
	s.mux.HandleFunc("POST /approvals/{id}", s.handleReply)
	s.mux.HandleFunc("POST /sessions/{id}/cancel", s.handleCancel)
	s.mux.HandleFunc("POST /sessions/{id}/message", s.handleMessage)
	// The same paths with another method, and everything else: JSON errors.
	for path, allow := range map[string]string{"/{$}": "POST", "/agents/{name}": "POST", "/agents": "GET, HEAD",
		"/healthz": "GET, HEAD", "/approvals": "GET, HEAD", "/approvals/{id}": "POST", "/sessions/{id}/cancel": "POST",
		"/sessions/{id}/message": "POST"} {
		s.mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Allow", allow)
			writeError(w, http.StatusMethodNotAllowed, fmt.Sprintf("method %s not allowed on %s; use %s", r.Method, r.URL.Path, allow))
		})
	}
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, fmt.Sprintf("no such endpoint: %s %s (try POST /, POST /agents/{name}, GET /agents, GET /healthz, GET /approvals, POST /approvals/{id}, POST /sessions/{id}/cancel, POST /sessions/{id}/message)", r.Method, r.URL.Path))
	})
	s.handler = httpsec.Handler(s.mux, s.security())
	return s
}

func (s *Server) security() httpsec.Options {
	return httpsec.Options{Token: s.opts.Token, CORSOrigins: s.opts.CORSOrigins}
}

// ServeHTTP implements http.Handler: every route behind the token and CORS
// checks of package httpsec.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.handler.ServeHTTP(w, r) }

// CancelRuns cancels every run in flight and every later one; their
// clients still get the end of their stream (RUN_FINISHED with outcome
// "cancelled").
func (s *Server) CancelRuns() { s.stopRuns() }

// Close cancels the runs (CancelRuns) and detaches the server from
// Options.Approvals: no request waits for this server's clients any more.
// Serve calls it once the last request has been answered; a server used as
// a plain http.Handler calls it when it is done.
func (s *Server) Close() {
	s.closeOnce.Do(func() {
		s.CancelRuns()
		if s.approvals != nil {
			s.approvals.shutdown()
		}
	})
}

// Serve serves on ln until ctx ends, then cancels the runs in flight
// (CancelRuns) and shuts down gracefully.
//
// It refuses a listener on a non-loopback address when no Token is set;
// on loopback without a token it answers only requests for a loopback
// Host (DNS rebinding). It holds at most MaxConns connections, and a
// request must arrive within BodyTimeout (see httpsec.NewServer).
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	if err := httpsec.CheckListener(ln, s.opts.Token); err != nil {
		return err
	}
	h := httpsec.Handler(s.mux, httpsec.WithListener(s.security(), ln))
	hs := httpsec.NewServer(h, s.opts.BodyTimeout, slog.NewLogLogger(s.log.Handler(), slog.LevelWarn))
	ln = httpsec.LimitListener(ln, s.opts.MaxConns)
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	s.CancelRuns()
	shutCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := hs.Shutdown(shutCtx)
	if serveErr := <-errc; !errors.Is(serveErr, http.ErrServerClosed) && err == nil {
		err = serveErr
	}
	s.Close()
	return err
}

func (s *Server) handleAgents(w http.ResponseWriter, r *http.Request) {
	def := s.pool.DefaultNode()
	out := struct {
		Agents []wire.AgentInfo `json:"agents"`
	}{Agents: []wire.AgentInfo{}}
	for _, name := range s.pool.NodeNames() {
		n, ok := s.pool.Node(name)
		if !ok {
			continue
		}
		out.Agents = append(out.Agents, wire.AgentInfo{Name: name, Description: n.Description(), Type: string(n.SourceType()), Default: name == def})
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) handleHealth(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// handleRun validates a run request and streams the run.
func (s *Server) handleRun(w http.ResponseWriter, r *http.Request, name string) {
	if name == "" {
		name = s.pool.DefaultNode()
	}
	if _, ok := s.pool.Node(name); !ok {
		writeError(w, http.StatusNotFound, fmt.Sprintf("unknown agent %q; available: %s", name, strings.Join(s.pool.NodeNames(), ", ")))
		return
	}
	ct := r.Header.Get("Content-Type")
	if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
		if ct == "" {
			ct = "none"
		}
		writeError(w, http.StatusUnsupportedMediaType, fmt.Sprintf("Content-Type must be application/json, got %s", ct))
		return
	}
	// Read the whole body: besides the size check, a body read to its end
	// lets net/http notice a client that disconnects during the run.
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.opts.MaxBodyBytes))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body larger than %d bytes", mbe.Limit))
			return
		}
		if httpsec.BodyTimedOut(err) {
			writeError(w, http.StatusRequestTimeout, fmt.Sprintf("request body not received within %s", s.opts.BodyTimeout))
			return
		}
		writeError(w, http.StatusBadRequest, "read body: "+err.Error())
		return
	}
	in, err := parseInput(body)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	l, err := s.parseLent(in, name)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	if _, err := promptOf(in); err != nil && !hasRole(in, "tool") {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	sid, exists, mapped, release, err := s.threads.resolve(r.Context(), in.ThreadID)
	defer release()
	switch {
	case errors.Is(err, errChildThread):
		writeError(w, http.StatusBadRequest, err.Error())
		return
	case err != nil:
		s.log.Error("agui: resolve thread", "thread", in.ThreadID, "err", err)
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	req := pool.RunRequest{Node: name, Instructions: l.instructions, ClientTools: l.tools}
	var prior priorState
	if exists {
		if s.pool.Runtime().Running(sid) {
			writeError(w, http.StatusConflict, fmt.Sprintf("thread %s has a run in progress", in.ThreadID))
			return
		}
		// The results of the client's tools the thread's last run called.
		last := -1
		req.ClientResults, last, err = s.clientResults(r.Context(), in, sid)
		if err != nil {
			status := http.StatusInternalServerError
			if _, bad := err.(*inputError); bad {
				status = http.StatusBadRequest
			}
			writeError(w, status, err.Error())
			return
		}
		if req.ClientResults != nil {
			req.Prompt, err = promptAfter(in, last)
		} else {
			req.Prompt, err = promptOf(in)
		}
		if err != nil {
			writeError(w, http.StatusBadRequest, err.Error())
			return
		}
		req.SessionID = sid
		// The thread's todo list so far: the run starts with it.
		prior.todos, prior.has, err = s.states.load(r.Context(), sid)
		if err != nil {
			s.log.Warn("agui: read the thread's todo list", "thread", in.ThreadID, "session", sid, "err", err)
			prior = priorState{}
		}
	} else {
		if req.Prompt, err = promptOf(in); err != nil {
			writeError(w, http.StatusBadRequest, err.Error())
			return
		}
		req.NewSessionID = sid
	}
	s.stream(w, r, in, req, prior, !exists && mapped)
}

// priorState is what a thread's earlier runs left in its AG-UI state.
type priorState struct {
	todos []wire.TodoItem
	has   bool
}

// stream runs req and writes its events to w as they come, through a
// bounded queue.
func (s *Server) stream(w http.ResponseWriter, r *http.Request, in *wire.RunAgentInput, req pool.RunRequest, prior priorState, recordThread bool) {
	// The run ends with its client (request context) or with the server.
	// A traceparent header makes the caller's span the parent of the run's
	// root span (when the pool is traced).
	ctx, cancel := context.WithCancel(tracing.WithRemoteParent(r.Context(), otelprop.FromHeader(r.Header)))
	defer cancel()
	stop := context.AfterFunc(s.runs, cancel)
	defer stop()
	sid := req.SessionID
	if sid == "" {
		sid = req.NewSessionID
	}
	q := newQueue(s.opts.QueueSize)
	if s.opts.onQueue != nil {
		s.opts.onQueue(q)
	}
	// The run's approval notices: registered before the run starts, so
	// that none of its requests is missed.
	var approvals *runApprovals
	if s.approvals != nil {
		approvals = s.approvals.open(in.ThreadID, in.RunID)
		defer s.approvals.close(approvals)
	}
	m := newMapper(mapperConfig{
		ThreadID: in.ThreadID, RunID: in.RunID, ParentRunID: in.ParentRunID, RootSession: sid, State: in.State,
		Todos: prior.todos, HasTodos: prior.has,
		Now: s.opts.now, NewID: s.opts.newID, Approvals: approvals, ClientResults: callIDs(req.ClientResults),
		OnRootStarted: func(event.RunStarted) {
			if recordThread {
				s.recordThread(ctx, sid, in.ThreadID)
			}
		},
	}, func(it item) { _ = q.Push(it) }) // fails only once the client is gone (Abort)

	var (
		wg     sync.WaitGroup
		res    pool.RunResult
		runErr error
	)
	wg.Go(func() {
		defer q.Close()
		res, runErr = s.pool.RunSink(ctx, req, event.SinkFunc(m.Map))
		if runErr == nil {
			m.Finish(res)
		} else {
			m.Fail(runErr)
		}
		if approvals != nil {
			approvals.close() // the forwarder returns
		}
	})
	if approvals != nil {
		// While the run waits for an answer it emits nothing: the
		// forwarder maps the notices as they come.
		wg.Go(func() {
			for approvals.wait() {
				m.ForwardApprovals()
			}
		})
	}

	sw := newSSEWriter(w, s.opts.FlushInterval, s.opts.WriteTimeout)
	for {
		sw.pace(r.Context())
		batch, err := q.Take(r.Context())
		if err != nil {
			break
		}
		if err := sw.write(batch); err != nil {
			s.log.Info("agui: client gone", "thread", in.ThreadID, "session", sid, "err", err)
			cancel()
			break
		}
	}
	q.Abort(nil) // from here on the run never waits for this client
	wg.Wait()
	sw.close()

	if runErr != nil && !sw.started {
		status := http.StatusInternalServerError
		switch {
		case errors.Is(runErr, pool.ErrUnknownNode):
			status = http.StatusNotFound
		case errors.Is(runErr, session.ErrExists), errors.Is(runErr, session.ErrRunning):
			status = http.StatusConflict
		}
		s.log.Warn("agui: run did not start", "thread", in.ThreadID, "session", sid, "err", runErr)
		writeError(w, status, runErr.Error())
		return
	}
	qs := q.Stats()
	s.log.Info("agui: run ended", "thread", in.ThreadID, "run", in.RunID, "session", sid, "node", req.Node,
		"stop", res.Result.StopReason, "merged_deltas", qs.Merged, "dropped", qs.Dropped)
}

// recordThread stores the thread id in the new root session's metadata.
func (s *Server) recordThread(ctx context.Context, sid, threadID string) {
	err := s.pool.Store().UpdateSession(context.WithoutCancel(ctx), sid, func(se *session.Session) {
		if se.Metadata == nil {
			se.Metadata = map[string]any{}
		}
		se.Metadata[MetadataThreadKey] = threadID
	})
	if err != nil {
		s.log.Warn("agui: record thread id", "thread", threadID, "session", sid, "err", err)
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"error":"encode response"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}

// writeError writes {"error": msg}.
func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]string{"error": msg})
}

func nowMillis() int64 { return time.Now().UnixMilli() }
