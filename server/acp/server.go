package acp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentpool/agentpool/approval"
	"github.com/agentpool/agentpool/hook"
	"github.com/agentpool/agentpool/pool"
	"github.com/agentpool/agentpool/tool/mcp"
	"github.com/agentpool/agentpool/tool/workspace"
)

// Options configure a Server.
type Options struct {
	Pool *pool.Pool
	// Agent is the mode (agent or team) of new sessions; the pool's default
	// node when empty.
	Agent  string
	Logger *slog.Logger
	// Name and Version are reported as agentInfo.
	Name, Version string
	// Cwd is reported for stored sessions that have no working directory of
	// their own; the process's working directory when empty.
	Cwd string
	// MaxLineBytes is the longest accepted message; DefaultMaxLineBytes
	// when 0.
	MaxLineBytes int
	// ProgressInterval throttles how often a child's streamed text is resent
	// in its spawn tool call (150ms when 0; negative: only at part ends and
	// tool calls).
	ProgressInterval time.Duration
	// QueueSize bounds the messages of one session that may wait for a
	// client that reads slowly (DefaultQueueSize when 0); see outbox.
	QueueSize int
	// Approvals, when set, is the broker of the pool's approval requests
	// (hook.Registry.UseBroker): while Serve serves a connection the
	// server is attached to it and asks the editor about the requests of
	// the connection's sessions (see the package documentation).
	Approvals *approval.Broker
}

// Server serves one pool over ACP. Serve handles one connection at a time.
type Server struct {
	opts Options
	pool *pool.Pool
	log  *slog.Logger

	mu   sync.Mutex
	conn *conn
	// hooks, set by UseHooks, is told when an ACP session ends.
	hooks atomic.Pointer[hook.Registry]
}

// ErrBusy is returned by Serve while another connection is being served.
var ErrBusy = errors.New("acp: server is already serving a connection")

// New builds a server. It fails when Agent names no node of the pool.
func New(opts Options) (*Server, error) {
	if opts.Pool == nil {
		return nil, errors.New("acp: Options.Pool is required")
	}
	if opts.Agent == "" {
		opts.Agent = opts.Pool.DefaultNode()
	}
	if _, ok := opts.Pool.Node(opts.Agent); !ok {
		return nil, fmt.Errorf("acp: %w %q; available: %v", pool.ErrUnknownNode, opts.Agent, opts.Pool.NodeNames())
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Name == "" {
		opts.Name = "agentpool"
	}
	if opts.Version == "" {
		opts.Version = "dev"
	}
	if opts.Cwd == "" {
		opts.Cwd, _ = os.Getwd()
	}
	if opts.MaxLineBytes <= 0 {
		opts.MaxLineBytes = DefaultMaxLineBytes
	}
	switch {
	case opts.ProgressInterval == 0:
		opts.ProgressInterval = 150 * time.Millisecond
	case opts.ProgressInterval < 0:
		opts.ProgressInterval = 0
	}
	return &Server{opts: opts, pool: opts.Pool, log: opts.Logger}, nil
}

// Serve reads JSON-RPC messages from r, one per line, and writes responses
// and notifications to w. It returns when r ends (nil on EOF) or when ctx
// is done (ctx.Err()); either way the running prompts are cancelled and
// waited for first. After a return on ctx, a goroutine may stay blocked in
// r.Read until r returns or is closed. The caller closes the pool afterwards
// (which flushes the store).
func (s *Server) Serve(ctx context.Context, r io.Reader, w io.Writer) error {
	c := &conn{s: s, log: s.log, sessions: map[string]*acpSession{}, owners: map[string]*acpSession{}, prompts: map[string]*promptRun{}}
	c.ctx, c.cancel = context.WithCancel(ctx)
	defer c.cancel()

	s.mu.Lock()
	if s.conn != nil {
		s.mu.Unlock()
		return ErrBusy
	}
	s.conn = c
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.conn = nil
		s.mu.Unlock()
	}()
	// Everything goes to the client through the outbox: runs never wait on
	// a slow client unless their own session's queue is full.
	c.out = newOutbox(w, s.opts.QueueSize, func(err error) {
		c.log.Error("acp: write to client failed; cancelling running prompts", "err", err)
		c.cancel()
	})
	c.calls = &caller{pending: map[int64]chan incoming{}, out: c.out}
	c.terms = &terminals{c: c}
	detach := c.attachApprovals(s.opts.Approvals)

	// The reader hands over one line at a time and reads the next only
	// once it is handled (the line buffer is reused), so that Serve can
	// also stop on ctx while a Read blocks.
	type read struct {
		line    []byte
		tooLong bool
		err     error
	}
	lines, ack, quit := make(chan read), make(chan struct{}), make(chan struct{})
	defer close(quit)
	go func() {
		lr := newLineReader(r, s.opts.MaxLineBytes)
		for {
			line, tooLong, err := lr.next()
			select {
			case lines <- read{line, tooLong, err}:
			case <-quit:
				return
			}
			if err != nil {
				return
			}
			select {
			case <-ack:
			case <-quit:
				return
			}
		}
	}()
	var err error
loop:
	for {
		select {
		case rd := <-lines:
			switch {
			case rd.tooLong:
				c.log.Warn("acp: message too long", "max_bytes", s.opts.MaxLineBytes)
				c.reply(nullID, nil, errorf(codeInvalidRequest, "Invalid request: message exceeds %d bytes", s.opts.MaxLineBytes))
			case len(bytes.TrimSpace(rd.line)) > 0:
				c.handleLine(bytes.TrimSpace(rd.line))
			}
			if rd.err != nil {
				if !errors.Is(rd.err, io.EOF) {
					err = rd.err
				}
				break loop
			}
			ack <- struct{}{}
		case <-ctx.Done():
			err = ctx.Err()
			break loop
		}
	}
	c.calls.close()
	c.cancel()
	c.wg.Wait()
	// The prompts have ended, and with them their approval requests.
	detach()
	// The prompts have ended: so have the sessions, for their hooks.
	c.endSessions(hook.CauseDisconnected)
	// No MCP server process of a session outlives the connection.
	c.closeAllMCP()
	c.bg.Wait()
	// The last replies (the cancelled prompts' answers) are written before
	// Serve returns.
	c.out.close()
	c.out.wait()
	if merged, most := c.out.stats(); merged > 0 {
		c.log.Info("acp: coalesced chunks for a slow client", "merged", merged, "longest_queue", most)
	}
	return err
}

// conn is the state of one connection.
type conn struct {
	s      *Server
	log    *slog.Logger
	ctx    context.Context // cancelled at the end of the input or on a write failure
	cancel context.CancelFunc
	out    *outbox
	calls  *caller
	terms  *terminals
	wg     sync.WaitGroup // running prompts
	bg     sync.WaitGroup // terminal releases and MCP closes sent in the background

	// mu guards what follows. One lock over sessions, owners and prompts:
	// opening a session writes sessions and owners together, and all three
	// are one editor's connection's, changed per session or prompt, never
	// per event (a run's events go through its converter's lock).
	mu       sync.Mutex
	view     spawnView
	caps     clientCaps
	sessions map[string]*acpSession // sessions opened on this connection
	owners   map[string]*acpSession // session or descendant id -> its ACP session
	prompts  map[string]*promptRun  // running prompts by request id
}

// acpSession is a session opened on the connection (session/new or
// session/load).
type acpSession struct {
	id string

	mu   sync.Mutex
	ws   *workspace.Workspace // its cwd; nil: the pool's workspace
	mcp  *mcp.Manager         // the MCP servers the client named; nil when none
	mode string
	// modelOf is the agent whose model the mode's agent runs on, chosen
	// by session/set_model; "" for the mode's own (models.go).
	modelOf string
	run     *promptRun
}

// setTools replaces the session's workspace and MCP servers, and stops
// the servers it had.
func (c *conn) setTools(s *acpSession, ws *workspace.Workspace, mgr *mcp.Manager) {
	s.mu.Lock()
	old := s.mcp
	s.ws, s.mcp = ws, mgr
	s.mu.Unlock()
	if old != mgr {
		c.closeMCP(old)
	}
}

type promptRun struct {
	cancel    context.CancelFunc
	cancelled atomic.Bool
	conv      *converter // set (under the session's lock) before the run starts
}

// reply answers a request that belongs to no session.
func (c *conn) reply(id json.RawMessage, result any, rerr *rpcError) { c.replyTo("", id, result, rerr) }

// replyTo answers a request in owner's queue: after the updates queued
// there (a prompt's answer follows its updates).
func (c *conn) replyTo(owner string, id json.RawMessage, result any, rerr *rpcError) {
	resp := response{JSONRPC: "2.0", ID: id}
	if rerr != nil {
		resp.Error = rerr
	} else {
		if result == nil {
			result = struct{}{}
		}
		resp.Result = result
	}
	if err := c.out.send(owner, resp); err != nil {
		c.log.Debug("acp: reply not sent", "err", err)
	}
}

// updater returns the sendFunc of owner's session: its updates (and those
// of its descendants) go to its queue.
func (c *conn) updater(owner string) sendFunc {
	return func(sessionID string, update any) {
		if err := c.out.update(owner, sessionID, update); err != nil {
			c.log.Debug("acp: update not sent", "err", err)
		}
	}
}

func (c *conn) handleLine(line []byte) {
	m, respID, rerr := parseMessage(line)
	if rerr != nil {
		c.log.Warn("acp: bad message", "code", rerr.Code, "err", rerr.Message)
		c.reply(respID, nil, rerr)
		return
	}
	if m.response {
		switch {
		case m.id != nil && c.calls.deliver(m):
		case m.id != nil && c.calls.abandoned(m.id):
			// A request the server stopped waiting for (its tool's context
			// ended: a terminal/wait_for_exit cut short by a timeout).
			c.log.Debug("acp: late response to an abandoned request", "id", string(m.id))
		default:
			c.log.Warn("acp: response to an unknown request", "id", string(m.id))
		}
		return
	}
	if m.id == nil {
		c.notification(m)
		return
	}
	var (
		result any
		err    *rpcError
		owner  string // the queue of the reply: the session's, for a load
	)
	switch m.method {
	case methodInitialize:
		result, err = c.initialize(m.params)
	case methodAuthenticate:
		result, err = c.authenticate(m.params)
	case methodSessionNew:
		result, err = c.newSession(m.params)
		if r, ok := result.(newSessionResult); ok && err == nil {
			// The reply, then the pool's slash commands, on the new
			// session's queue: the editor knows the session first.
			c.replyTo(r.SessionID, m.id, result, nil)
			c.offerCommands(r.SessionID)
			return
		}
	case methodSessionLoad:
		var then func()
		result, owner, then, err = c.loadSession(m.params)
		if err == nil && owner != "" {
			c.replyTo(owner, m.id, result, nil)
			c.offerCommands(owner)
			if then != nil {
				then()
			}
			return
		}
		if then != nil {
			c.replyTo(owner, m.id, result, err)
			then()
			return
		}
	case methodSessionList:
		result, err = c.listSessions(m.params)
	case methodSessionSetMode:
		result, err = c.setMode(m.params)
	case methodSessionSetModel:
		result, err = setModel(c, m.params)
	case methodSessionPrompt:
		if err = c.prompt(m.id, m.params); err == nil {
			return // answered when the run ends
		}
	case methodSessionCancel:
		c.cancelSession(m.params)
	case methodSessionClose:
		result, err = c.closeSession(m.params)
	case methodAgentpoolCancel:
		result, err = c.extCancel(m.params)
	case methodAgentpoolMessage:
		var later bool
		if result, err, later = c.extMessage(m.id, m.params); later {
			return // answered when the continued child's run ends
		}
	default:
		err = &rpcError{Code: codeMethodNotFound, Message: "Method not found: " + m.method, Data: map[string]any{"method": m.method}}
	}
	c.replyTo(owner, m.id, result, err)
}

func (c *conn) notification(m incoming) {
	switch m.method {
	case methodSessionCancel:
		c.cancelSession(m.params)
	case methodAgentpoolCancel:
		if _, err := c.extCancel(m.params); err != nil {
			c.log.Warn("acp: "+methodAgentpoolCancel, "err", err.Message)
		}
	case methodCancelRequest:
		var p struct {
			RequestID json.RawMessage `json:"requestId"`
		}
		if decodeParams(m.params, &p) != nil || len(p.RequestID) == 0 {
			return
		}
		c.mu.Lock()
		run := c.prompts[string(bytes.TrimSpace(p.RequestID))]
		c.mu.Unlock()
		if run != nil {
			run.cancelled.Store(true)
			run.cancel()
		}
	default:
		c.log.Debug("acp: notification ignored", "method", m.method)
	}
}
