package mcp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentpool/agentpool/tool"
)

// errClosed is the error of everything after Manager.Close.
var errClosed = errors.New("closed")

// server is one configured MCP server and its tool.Toolset.
type server struct {
	m             *Manager
	cfg           ServerConfig
	log           *slog.Logger
	httpTransport *http.Transport // sse and streamable-http only

	refreshMu sync.Mutex // one tools/list refresh at a time

	mu       sync.Mutex
	state    string
	err      error       // why the server is failed
	sess     *session    // the live session, nil when none
	starting *startOp    // the start in progress, nil when none
	tools    []tool.Tool // the last listing
	closed   bool
}

// startOp is one start that concurrent callers wait for.
type startOp struct {
	done chan struct{}
	sess *session
	err  error
}

// session is one connection to the server (one process, for stdio).
type session struct {
	cs     *sdk.ClientSession
	proc   *process        // stdio only
	ctx    context.Context // cancelled when the session is shut down
	cancel context.CancelFunc
	dead   chan struct{} // closed when the connection has ended
	stale  atomic.Bool   // the server said its tool list changed

	deadOnce sync.Once
	cause    error // why the connection ended; set before dead is closed
	shutOnce sync.Once
}

func newServer(m *Manager, cfg ServerConfig) *server {
	s := &server{m: m, cfg: cfg, log: m.log.With("mcp_server", cfg.Name), state: StateNotStarted}
	if cfg.Dial == nil && (cfg.Transport == TransportSSE || cfg.Transport == TransportStreamableHTTP) {
		s.httpTransport = http.DefaultTransport.(*http.Transport).Clone()
	}
	return s
}

// Name implements tool.Toolset.
func (s *server) Name() string { return "mcp server " + s.cfg.Name }

// Tools implements tool.Toolset: it starts the server if needed (a failed
// start is returned, and tried again on the next call) and returns its
// tools, listing them again when the server said they changed.
func (s *server) Tools(ctx context.Context) ([]tool.Tool, error) {
	sess, err := s.ensure(ctx)
	if err != nil {
		return nil, fmt.Errorf("mcp server %s: %w", s.cfg.Name, err)
	}
	if sess.stale.Load() {
		s.refresh(ctx, sess)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tools, nil
}

// refresh lists the tools again after notifications/tools/list_changed.
// On failure the previous list stays (and the next Tools tries again).
func (s *server) refresh(ctx context.Context, sess *session) {
	s.refreshMu.Lock()
	defer s.refreshMu.Unlock()
	if !sess.stale.Swap(false) {
		return // another caller refreshed
	}
	ctx, cancel := context.WithTimeout(ctx, s.m.opts.StartTimeout)
	defer cancel()
	stop := context.AfterFunc(sess.ctx, cancel)
	defer stop()
	list, err := listTools(ctx, sess.cs)
	if err != nil {
		sess.stale.Store(true)
		s.log.Warn("mcp: listing changed tools failed", "error", err)
		return
	}
	tools := s.wrap(list)
	s.mu.Lock()
	if s.sess == sess {
		s.tools = tools
	}
	s.mu.Unlock()
	s.log.Debug("mcp: tool list refreshed", "tools", len(tools))
}

// ensure returns the live session, starting the server when there is
// none. Concurrent callers share one start; the start runs on its own
// (StartTimeout, Manager.Close), so a caller whose ctx ends stops waiting
// without cancelling it for the others.
func (s *server) ensure(ctx context.Context) (*session, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, errClosed
	}
	if s.sess != nil {
		if !s.sess.isDead() {
			sess := s.sess
			s.mu.Unlock()
			return sess, nil
		}
		s.sess = nil // its watcher stops it
	}
	op := s.starting
	if op == nil {
		op = &startOp{done: make(chan struct{})}
		s.starting = op
		s.m.wg.Add(1)
		go s.start(op)
	}
	s.mu.Unlock()
	select {
	case <-op.done:
		return op.sess, op.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// start runs one start and installs its session.
func (s *server) start(op *startOp) {
	defer s.m.wg.Done()
	t0 := time.Now()
	sess, tools, err := s.connect()
	s.mu.Lock()
	s.starting = nil
	switch {
	case s.closed:
		if sess != nil {
			defer sess.shutdown()
		}
		err, sess = errClosed, nil
	case err != nil:
		s.state, s.err = StateFailed, err
	default:
		s.sess, s.tools = sess, tools
		s.state, s.err = StateConnected, nil
	}
	op.sess, op.err = sess, err
	close(op.done)
	s.mu.Unlock()
	if err != nil && !errors.Is(err, errClosed) {
		s.log.Warn("mcp: server failed to start", "error", err)
	} else if err == nil {
		s.log.Info("mcp: server started", "tools", len(tools), "took", time.Since(t0).Round(time.Millisecond))
	}
}

// connect makes a session: transport, initialize, list tools, all within
// StartTimeout.
func (s *server) connect() (*session, []tool.Tool, error) {
	lifeCtx, lifeCancel := context.WithCancel(s.m.ctx)
	sess := &session{ctx: lifeCtx, cancel: lifeCancel, dead: make(chan struct{})}
	startCtx, cancelStart := context.WithTimeout(lifeCtx, s.m.opts.StartTimeout)
	defer cancelStart()
	// The transport runs under the session's lifetime (an SSE stream is
	// bound to the context it was opened with); a start that times out
	// must end that too.
	stopAbort := context.AfterFunc(startCtx, lifeCancel)

	list, err := s.dial(startCtx, sess)
	if !stopAbort() && err == nil {
		err = startCtx.Err()
	}
	if err != nil {
		if s.m.ctx.Err() != nil {
			err = errClosed
		} else if startCtx.Err() == context.DeadlineExceeded {
			err = fmt.Errorf("timed out after %s: %w", s.m.opts.StartTimeout, err)
		}
		sess.shutdown()
		if sess.proc != nil {
			err = fmt.Errorf("%w%s", err, sess.proc.describe())
		}
		return nil, nil, fmt.Errorf("start: %w", err)
	}
	s.m.wg.Add(1)
	go s.watch(sess)
	return sess, s.wrap(list), nil
}

// dial connects sess and lists the server's tools.
func (s *server) dial(ctx context.Context, sess *session) ([]*sdk.Tool, error) {
	var t sdk.Transport
	switch {
	case s.cfg.Dial != nil:
		var err error
		if t, err = s.cfg.Dial(ctx); err != nil {
			return nil, err
		}
	case s.cfg.Transport == TransportStdio:
		p, err := startProcess(s.cfg, s.log)
		if err != nil {
			return nil, err
		}
		sess.proc = p
		t = &sdk.IOTransport{Reader: p.stdout, Writer: p.stdin}
	case s.cfg.Transport == TransportSSE:
		t = &sdk.SSEClientTransport{Endpoint: s.cfg.URL, HTTPClient: s.httpClient()}
	default:
		t = &sdk.StreamableClientTransport{Endpoint: s.cfg.URL, HTTPClient: s.httpClient()}
	}
	client := sdk.NewClient(
		&sdk.Implementation{Name: s.m.opts.ClientName, Version: s.m.opts.ClientVersion},
		&sdk.ClientOptions{
			Logger: s.log,
			// No roots, sampling or elicitation: agentpool offers none.
			Capabilities: &sdk.ClientCapabilities{},
			ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) {
				sess.stale.Store(true)
				s.log.Debug("mcp: server says its tools changed")
			},
		})
	cs, err := client.Connect(ctx, lifeTransport{ctx: sess.ctx, t: t}, nil)
	if err != nil {
		return nil, err
	}
	sess.cs = cs
	return listTools(ctx, cs)
}

// lifeTransport connects its transport under the session's lifetime
// rather than the start's deadline.
type lifeTransport struct {
	ctx context.Context
	t   sdk.Transport
}

func (l lifeTransport) Connect(context.Context) (sdk.Connection, error) { return l.t.Connect(l.ctx) }

// listTools lists every tool, following pagination.
func listTools(ctx context.Context, cs *sdk.ClientSession) ([]*sdk.Tool, error) {
	var list []*sdk.Tool
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return nil, fmt.Errorf("listing tools: %w", err)
		}
		list = append(list, t)
	}
	return list, nil
}

// watch waits for the connection to end (server exit, EOF, garbage on
// stdout, Close) and then stops the session; the next use restarts it.
func (s *server) watch(sess *session) {
	defer s.m.wg.Done()
	err := sess.cs.Wait()
	reason := "connection closed"
	if err != nil {
		reason = "connection lost: " + err.Error()
	}
	sess.markDead(errors.New(reason))
	if sess.proc != nil && sess.proc.waitExit(200*time.Millisecond) {
		reason = "server process exited (" + sess.proc.exitStatus() + ")"
	}
	s.mu.Lock()
	lost := s.sess == sess && !s.closed
	if lost {
		s.sess = nil
		s.state, s.err = StateFailed, errors.New(reason)
	}
	s.mu.Unlock()
	if lost {
		s.log.Warn("mcp: server connection ended; it restarts on next use", "reason", reason)
	}
	sess.shutdown()
}

// drop retires a session that failed a call: it is stopped in the
// background and the next use starts a new one.
func (s *server) drop(sess *session, err error) {
	sess.markDead(err)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return // Close stops it
	}
	if s.sess == sess {
		s.sess = nil
		s.state, s.err = StateFailed, err
		s.log.Warn("mcp: server failed; restarting it", "error", err)
	}
	s.m.wg.Add(1)
	go func() {
		defer s.m.wg.Done()
		sess.shutdown()
	}()
}

// close is Manager.Close for one server.
func (s *server) close() {
	s.mu.Lock()
	s.closed = true
	sess := s.sess
	s.sess = nil
	s.state, s.err = StateClosed, nil
	s.mu.Unlock()
	if sess != nil {
		sess.shutdown()
	}
}

func (s *server) status() ServerStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := ServerStatus{Name: s.cfg.Name, Transport: s.cfg.Transport, State: s.state}
	if s.err != nil {
		st.Error = s.err.Error()
	}
	for _, t := range s.tools {
		st.Tools = append(st.Tools, t.Info().Name)
	}
	return st
}

func (sess *session) isDead() bool {
	select {
	case <-sess.dead:
		return true
	default:
		return false
	}
}

// explain adds how the server process ended, if it did, to a call error.
func (sess *session) explain(err error) error {
	if sess.proc != nil && sess.proc.waitExit(100*time.Millisecond) {
		return fmt.Errorf("%w (server process %s)", err, sess.proc.exitStatus())
	}
	return err
}

// markDead records that the connection ended, and why (the first cause
// given wins).
func (sess *session) markDead(cause error) {
	sess.deadOnce.Do(func() {
		sess.cause = cause
		close(sess.dead)
	})
}

// why returns why the connection ended, or nil while it lives.
func (sess *session) why() error {
	select {
	case <-sess.dead:
		return sess.cause
	default:
		return nil
	}
}

// shutdown ends the session: in-flight calls return, the process (stdio)
// gets EOF on stdin, a grace, then SIGKILL for its whole process tree,
// and the client session is closed. Idempotent; concurrent callers wait.
func (sess *session) shutdown() {
	sess.shutOnce.Do(func() {
		sess.markDead(errors.New("session stopped"))
		sess.cancel()
		if sess.proc != nil {
			sess.proc.stop()
		}
		if sess.cs != nil {
			_ = sess.cs.Close()
		}
	})
}
