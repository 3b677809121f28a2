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
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentpool/agentpool/agent"
	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/id"
	"github.com/agentpool/agentpool/pool"
	"github.com/agentpool/agentpool/session"
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
}

// Server serves one pool over ACP. Serve handles one connection at a time.
type Server struct {
	opts Options
	pool *pool.Pool
	log  *slog.Logger

	mu   sync.Mutex
	conn *conn
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
				c.reply(nullID, nil, errorf(CodeInvalidRequest, "Invalid request: message exceeds %d bytes", s.opts.MaxLineBytes))
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
	wg     sync.WaitGroup // running prompts

	mu        sync.Mutex
	subagents bool
	sessions  map[string]*acpSession // sessions opened on this connection
	owners    map[string]*acpSession // session or descendant id -> its ACP session
	prompts   map[string]*promptRun  // running prompts by request id
}

// acpSession is a session opened on the connection (session/new or
// session/load).
type acpSession struct {
	id  string
	cwd string

	mu     sync.Mutex
	mode   string
	run    *promptRun
	always map[string]ApprovalDecision // tool name -> allowed_always | rejected
}

type promptRun struct {
	cancel    context.CancelFunc
	cancelled atomic.Bool
}

// reply answers a request that belongs to no session.
func (c *conn) reply(id json.RawMessage, result any, rerr *Error) { c.replyTo("", id, result, rerr) }

// replyTo answers a request in owner's queue: after the updates queued
// there (a prompt's answer follows its updates).
func (c *conn) replyTo(owner string, id json.RawMessage, result any, rerr *Error) {
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
		if m.id == nil || !c.calls.deliver(m) {
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
		err    *Error
		owner  string // the queue of the reply: the session's, for a load
	)
	switch m.method {
	case methodInitialize:
		result, err = c.initialize(m.params)
	case methodAuthenticate:
		result, err = c.authenticate(m.params)
	case methodSessionNew:
		result, err = c.newSession(m.params)
	case methodSessionLoad:
		result, owner, err = c.loadSession(m.params)
	case methodSessionList:
		result, err = c.listSessions(m.params)
	case methodSessionSetMode:
		result, err = c.setMode(m.params)
	case methodSessionPrompt:
		if err = c.prompt(m.id, m.params); err == nil {
			return // answered when the run ends
		}
	case methodSessionCancel:
		c.cancelSession(m.params)
	default:
		err = &Error{Code: CodeMethodNotFound, Message: "Method not found: " + m.method, Data: map[string]any{"method": m.method}}
	}
	c.replyTo(owner, m.id, result, err)
}

func (c *conn) notification(m incoming) {
	switch m.method {
	case methodSessionCancel:
		c.cancelSession(m.params)
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

// ---- initialize, authenticate ----

type implementation struct {
	Name    string `json:"name"`
	Title   string `json:"title,omitempty"`
	Version string `json:"version"`
}

type initializeResult struct {
	ProtocolVersion   int               `json:"protocolVersion"`
	AgentCapabilities agentCapabilities `json:"agentCapabilities"`
	AuthMethods       []any             `json:"authMethods"`
	AgentInfo         implementation    `json:"agentInfo"`
	Meta              map[string]any    `json:"_meta,omitempty"`
}

type agentCapabilities struct {
	LoadSession        bool `json:"loadSession"`
	PromptCapabilities struct {
		Image           bool `json:"image"`
		Audio           bool `json:"audio"`
		EmbeddedContext bool `json:"embeddedContext"`
	} `json:"promptCapabilities"`
	MCPCapabilities struct {
		HTTP bool `json:"http"`
		SSE  bool `json:"sse"`
	} `json:"mcpCapabilities"`
	SessionCapabilities struct {
		List struct{} `json:"list"`
	} `json:"sessionCapabilities"`
}

func (c *conn) initialize(params json.RawMessage) (any, *Error) {
	var p struct {
		ProtocolVersion    *json.Number `json:"protocolVersion"`
		ClientCapabilities *struct {
			Subagents json.RawMessage `json:"subagents"`
		} `json:"clientCapabilities"`
		ClientInfo *implementation `json:"clientInfo"`
	}
	if err := decodeParams(params, &p); err != nil {
		return nil, err
	}
	if p.ProtocolVersion == nil {
		return nil, invalidParams("protocolVersion is required")
	}
	if _, err := p.ProtocolVersion.Int64(); err != nil {
		return nil, invalidParams("protocolVersion must be an integer")
	}
	subagents := false
	if p.ClientCapabilities != nil {
		raw := bytes.TrimSpace(p.ClientCapabilities.Subagents)
		subagents = len(raw) > 0 && raw[0] == '{'
	}
	c.mu.Lock()
	c.subagents = subagents
	c.mu.Unlock()
	client := ""
	if p.ClientInfo != nil {
		client = p.ClientInfo.Name + " " + p.ClientInfo.Version
	}
	c.log.Info("acp: initialize", "client", strings.TrimSpace(client), "protocol_version", p.ProtocolVersion.String(), "subagents", subagents)

	res := initializeResult{
		ProtocolVersion: ProtocolVersion,
		AuthMethods:     []any{},
		AgentInfo:       implementation{Name: c.s.opts.Name, Title: "AgentPool", Version: c.s.opts.Version},
		Meta:            map[string]any{"agentpool": map[string]any{"subagents": true, "spawn_tool_call_prefix": SpawnToolCallPrefix}},
	}
	res.AgentCapabilities.LoadSession = true
	res.AgentCapabilities.PromptCapabilities.EmbeddedContext = true
	return res, nil
}

func (c *conn) authenticate(params json.RawMessage) (any, *Error) {
	var p struct {
		MethodID *string `json:"methodId"`
	}
	if err := decodeParams(params, &p); err != nil {
		return nil, err
	}
	if p.MethodID == nil {
		return nil, invalidParams("methodId is required")
	}
	// No authentication is required: there is nothing to authenticate.
	return struct{}{}, nil
}

// ---- sessions ----

type sessionMode struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
}

type modeState struct {
	CurrentModeID  string        `json:"currentModeId"`
	AvailableModes []sessionMode `json:"availableModes"`
}

func (c *conn) modes(current string) *modeState {
	st := &modeState{CurrentModeID: current}
	for _, name := range c.s.pool.NodeNames() {
		n, _ := c.s.pool.Node(name)
		st.AvailableModes = append(st.AvailableModes, sessionMode{ID: name, Name: name, Description: n.Description()})
	}
	return st
}

func (c *conn) addSession(s *acpSession) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sessions[s.id] = s
	c.owners[s.id] = s
}

// session returns the session with that id: one opened on this connection,
// else a stored one, which is opened (without replay).
func (c *conn) session(sid string) (*acpSession, *Error) {
	c.mu.Lock()
	s := c.sessions[sid]
	c.mu.Unlock()
	if s != nil {
		return s, nil
	}
	stored, err := c.s.pool.Store().GetSession(c.ctx, sid)
	if err != nil {
		if errors.Is(err, session.ErrNotFound) {
			return nil, sessionNotFound(sid)
		}
		return nil, errorf(CodeInternalError, "Internal error: %v", err)
	}
	s = c.open(stored, "")
	return s, nil
}

// open makes an acpSession for a stored session.
func (c *conn) open(stored session.Session, cwd string) *acpSession {
	mode := stored.AgentName
	if _, ok := c.s.pool.Node(mode); !ok {
		mode = c.s.opts.Agent
	}
	if cwd == "" {
		cwd = sessionCwd(stored, c.s.opts.Cwd)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if s := c.sessions[stored.ID]; s != nil {
		return s
	}
	s := &acpSession{id: stored.ID, cwd: cwd, mode: mode}
	c.sessions[s.id] = s
	c.owners[s.id] = s
	return s
}

func sessionCwd(s session.Session, def string) string {
	if cwd, ok := s.Metadata["cwd"].(string); ok && cwd != "" {
		return cwd
	}
	return def
}

type newSessionParams struct {
	SessionID  string            `json:"sessionId"` // session/load only
	Cwd        *string           `json:"cwd"`
	MCPServers []json.RawMessage `json:"mcpServers"`
}

func (c *conn) newSession(params json.RawMessage) (any, *Error) {
	var p newSessionParams
	if err := decodeParams(params, &p); err != nil {
		return nil, err
	}
	if p.Cwd == nil {
		return nil, invalidParams("cwd is required")
	}
	if len(p.MCPServers) > 0 {
		c.log.Warn("acp: MCP servers are not supported; ignoring them", "count", len(p.MCPServers))
	}
	mode := c.s.opts.Agent
	node, _ := c.s.pool.Node(mode)
	now := time.Now()
	stored := session.Session{
		ID: id.Descending(id.Session), AgentName: mode, SourceType: node.SourceType(),
		Status: session.StatusIdle, CreatedAt: now, UpdatedAt: now,
		Metadata: map[string]any{"cwd": *p.Cwd, "client": "acp"},
	}
	if err := c.s.pool.Store().CreateSession(c.ctx, stored); err != nil {
		return nil, errorf(CodeInternalError, "Internal error: create session: %v", err)
	}
	s := &acpSession{id: stored.ID, cwd: *p.Cwd, mode: mode}
	c.addSession(s)
	c.log.Info("acp: session created", "session", s.id, "mode", mode)
	return struct {
		SessionID string     `json:"sessionId"`
		Modes     *modeState `json:"modes"`
	}{s.id, c.modes(mode)}, nil
}

// loadSession answers session/load; the reply goes to the returned owner's
// queue, after the replayed history.
func (c *conn) loadSession(params json.RawMessage) (any, string, *Error) {
	var p newSessionParams
	if err := decodeParams(params, &p); err != nil {
		return nil, "", err
	}
	if p.SessionID == "" {
		return nil, "", invalidParams("sessionId is required")
	}
	if p.Cwd == nil {
		return nil, "", invalidParams("cwd is required")
	}
	stored, err := c.s.pool.Store().GetSession(c.ctx, p.SessionID)
	if err != nil {
		if errors.Is(err, session.ErrNotFound) {
			return nil, "", sessionNotFound(p.SessionID)
		}
		return nil, "", errorf(CodeInternalError, "Internal error: %v", err)
	}
	s := c.open(stored, *p.Cwd)
	s.mu.Lock()
	busy := s.run != nil
	mode := s.mode
	s.mu.Unlock()
	if busy {
		return nil, "", errorf(CodeInternalError, "Internal error: session %s has a prompt in progress", s.id)
	}
	if err := c.replay(s.id); err != nil {
		return nil, s.id, errorf(CodeInternalError, "Internal error: replay: %v", err)
	}
	c.log.Info("acp: session loaded", "session", s.id, "mode", mode)
	return struct {
		Modes *modeState `json:"modes"`
	}{c.modes(mode)}, s.id, nil
}

type sessionInfo struct {
	SessionID string         `json:"sessionId"`
	Cwd       string         `json:"cwd"`
	Title     string         `json:"title,omitempty"`
	UpdatedAt string         `json:"updatedAt,omitempty"`
	Meta      map[string]any `json:"_meta,omitempty"`
}

const listPageSize = 100

func (c *conn) listSessions(params json.RawMessage) (any, *Error) {
	var p struct {
		Cwd    *string `json:"cwd"`
		Cursor *string `json:"cursor"`
	}
	if err := decodeParams(params, &p); err != nil {
		return nil, err
	}
	all, err := c.s.pool.Store().ListSessions(c.ctx, session.ListOptions{RootsOnly: true})
	if err != nil {
		return nil, errorf(CodeInternalError, "Internal error: %v", err)
	}
	var list []session.Session
	for _, s := range all {
		if p.Cwd != nil && *p.Cwd != "" && sessionCwd(s, c.s.opts.Cwd) != *p.Cwd {
			continue
		}
		list = append(list, s)
	}
	start := 0
	if p.Cursor != nil && *p.Cursor != "" {
		start = -1
		for i, s := range list {
			if s.ID == *p.Cursor {
				start = i + 1
				break
			}
		}
		if start < 0 {
			return nil, invalidParams("unknown cursor")
		}
	}
	out := struct {
		Sessions   []sessionInfo `json:"sessions"`
		NextCursor string        `json:"nextCursor,omitempty"`
	}{Sessions: []sessionInfo{}}
	for i := start; i < len(list); i++ {
		if len(out.Sessions) == listPageSize {
			out.NextCursor = list[i-1].ID
			break
		}
		s := list[i]
		out.Sessions = append(out.Sessions, sessionInfo{
			SessionID: s.ID, Cwd: sessionCwd(s, c.s.opts.Cwd), Title: s.Title,
			UpdatedAt: s.UpdatedAt.UTC().Format(time.RFC3339),
			Meta:      map[string]any{"agentpool": map[string]any{"agent_name": s.AgentName, "status": s.Status}},
		})
	}
	return out, nil
}

func (c *conn) setMode(params json.RawMessage) (any, *Error) {
	var p struct {
		SessionID string `json:"sessionId"`
		ModeID    string `json:"modeId"`
	}
	if err := decodeParams(params, &p); err != nil {
		return nil, err
	}
	if p.SessionID == "" || p.ModeID == "" {
		return nil, invalidParams("sessionId and modeId are required")
	}
	if _, ok := c.s.pool.Node(p.ModeID); !ok {
		return nil, invalidParams("unknown mode %q; available: %v", p.ModeID, c.s.pool.NodeNames())
	}
	s, rerr := c.session(p.SessionID)
	if rerr != nil {
		return nil, rerr
	}
	s.mu.Lock()
	s.mode = p.ModeID
	s.mu.Unlock()
	if err := c.s.pool.Store().UpdateSession(c.ctx, s.id, func(st *session.Session) { st.AgentName = p.ModeID }); err != nil {
		c.log.Warn("acp: store mode", "session", s.id, "err", err)
	}
	return struct{}{}, nil
}

func (c *conn) cancelSession(params json.RawMessage) {
	var p struct {
		SessionID string `json:"sessionId"`
	}
	if decodeParams(params, &p) != nil || p.SessionID == "" {
		c.log.Warn("acp: session/cancel without a sessionId")
		return
	}
	c.mu.Lock()
	s := c.sessions[p.SessionID]
	c.mu.Unlock()
	if s == nil {
		return
	}
	s.mu.Lock()
	run := s.run
	s.mu.Unlock()
	if run != nil {
		c.log.Info("acp: cancel", "session", s.id)
		run.cancelled.Store(true)
		run.cancel()
	}
}

// ---- prompt ----

func (c *conn) prompt(reqID json.RawMessage, params json.RawMessage) *Error {
	var p struct {
		SessionID string          `json:"sessionId"`
		Prompt    *[]ContentBlock `json:"prompt"`
	}
	if err := decodeParams(params, &p); err != nil {
		return err
	}
	if p.SessionID == "" {
		return invalidParams("sessionId is required")
	}
	if p.Prompt == nil {
		return invalidParams("prompt is required")
	}
	text, rerr := promptText(*p.Prompt)
	if rerr != nil {
		return rerr
	}
	s, rerr := c.session(p.SessionID)
	if rerr != nil {
		return rerr
	}
	ctx, cancel := context.WithCancel(c.ctx)
	run := &promptRun{cancel: cancel}
	s.mu.Lock()
	if s.run != nil {
		s.mu.Unlock()
		cancel()
		return errorf(CodeInternalError, "Internal error: session %s already has a prompt in progress", s.id)
	}
	s.run = run
	mode := s.mode
	s.mu.Unlock()
	key := string(bytes.TrimSpace(reqID))
	c.mu.Lock()
	c.prompts[key] = run
	subagents := c.subagents
	c.mu.Unlock()

	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		defer cancel()
		result, rerr := c.runPrompt(ctx, s, run, mode, text, subagents)
		s.mu.Lock()
		s.run = nil
		s.mu.Unlock()
		c.mu.Lock()
		delete(c.prompts, key)
		c.mu.Unlock()
		c.replyTo(s.id, reqID, result, rerr)
	}()
	return nil
}

type promptResult struct {
	StopReason string         `json:"stopReason"`
	Meta       map[string]any `json:"_meta,omitempty"`
}

func (c *conn) runPrompt(ctx context.Context, s *acpSession, run *promptRun, mode, text string, subagents bool) (any, *Error) {
	store := c.s.pool.Store()
	if stored, err := store.GetSession(ctx, s.id); err == nil && stored.Title == "" {
		t := title(text)
		if err := store.UpdateSession(ctx, s.id, func(st *session.Session) { st.Title = t }); err == nil {
			c.updater(s.id)(s.id, SessionInfoUpdate{SessionUpdate: UpdateSessionInfo, Title: t, UpdatedAt: time.Now().UTC().Format(time.RFC3339)})
		}
	}
	var children []string
	conv := newConverter(s.id, subagents, c.updater(s.id), c.log)
	conv.interval = c.s.opts.ProgressInterval
	conv.onSpawn = func(child string) {
		children = append(children, child) // under conv.mu
		c.mu.Lock()
		c.owners[child] = s
		c.mu.Unlock()
	}
	defer func() {
		c.mu.Lock()
		for _, ch := range children {
			delete(c.owners, ch)
		}
		c.mu.Unlock()
	}()
	c.log.Info("acp: prompt", "session", s.id, "mode", mode)
	res, err := c.s.pool.RunSink(ctx, pool.RunRequest{Node: mode, Prompt: text, SessionID: s.id}, conv)
	stop := res.Result.StopReason
	if run.cancelled.Load() || (err != nil && ctx.Err() != nil) {
		stop = event.StopAborted
	}
	conv.Finish(stop)
	if err != nil && stop != event.StopAborted {
		c.log.Error("acp: run did not start", "session", s.id, "err", err)
		if errors.Is(err, session.ErrNotFound) {
			return nil, sessionNotFound(s.id)
		}
		return nil, errorf(CodeInternalError, "Internal error: %v", err)
	}
	meta := map[string]any{"agentpool": map[string]any{
		"session_id": s.id, "stop_reason": stop, "usage": res.TotalUsage, "cost": res.TotalCost,
	}}
	c.log.Info("acp: prompt ended", "session", s.id, "stop_reason", stop)
	switch {
	case stop == event.StopAborted:
		return promptResult{StopReason: StopCancelled, Meta: meta}, nil
	case stop == event.StopCompleted:
		return promptResult{StopReason: StopEndTurn, Meta: meta}, nil
	case stop == event.StopMaxTokens:
		return promptResult{StopReason: StopMaxTokens, Meta: meta}, nil
	case stop == event.StopRefusal:
		return promptResult{StopReason: StopRefusal, Meta: meta}, nil
	case errors.Is(res.Result.Err, agent.ErrMaxTurns):
		return promptResult{StopReason: StopMaxTurnRequests, Meta: meta}, nil
	}
	msg := stop
	if res.Result.Err != nil {
		msg = res.Result.Err.Error()
	}
	return nil, &Error{Code: CodeInternalError, Message: "Internal error: run failed: " + msg, Data: map[string]any{"sessionId": s.id, "stop_reason": stop}}
}

// promptText joins a prompt's content blocks into the text the agent gets.
func promptText(blocks []ContentBlock) (string, *Error) {
	var parts []string
	for i, b := range blocks {
		switch b.Type {
		case "text":
			parts = append(parts, b.Text)
		case "resource_link":
			name := b.Name
			if name == "" {
				name = b.URI
			}
			parts = append(parts, fmt.Sprintf("[%s](%s)", name, b.URI))
		case "resource":
			if b.Resource == nil {
				return "", invalidParams("prompt[%d]: resource block without a resource", i)
			}
			if b.Resource.Text == nil {
				parts = append(parts, fmt.Sprintf("[binary resource %s omitted]", b.Resource.URI))
				continue
			}
			parts = append(parts, fmt.Sprintf("<context uri=%q>\n%s\n</context>", b.Resource.URI, *b.Resource.Text))
		case "image", "audio":
			return "", invalidParams("prompt[%d]: %s content is not supported (see promptCapabilities)", i, b.Type)
		default:
			return "", invalidParams("prompt[%d]: unknown content block type %q", i, b.Type)
		}
	}
	return strings.Join(parts, "\n\n"), nil
}

func title(prompt string) string {
	prompt = strings.Join(strings.Fields(prompt), " ")
	r := []rune(prompt)
	if len(r) > 60 {
		return string(r[:60]) + "..."
	}
	return prompt
}
