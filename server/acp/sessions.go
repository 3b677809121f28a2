package acp

import (
	"encoding/json"
	"errors"
	"time"

	"github.com/agentpool/agentpool/hook"
	"github.com/agentpool/agentpool/id"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/tool/workspace"
)

// Session methods: session/new, session/load, session/list,
// session/set_mode, session/cancel and session/close.

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
func (c *conn) session(sid string) (*acpSession, *rpcError) {
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
		return nil, errorf(codeInternalError, "Internal error: %v", err)
	}
	return c.open(stored), nil
}

// open returns the acpSession of a stored session, opening it (in its
// stored cwd) when it is not open on this connection: a prompt naming it
// without session/load.
func (c *conn) open(stored session.Session) *acpSession {
	c.mu.Lock()
	s := c.sessions[stored.ID]
	c.mu.Unlock()
	if s != nil {
		return s
	}
	return c.openIn(stored, c.sessionWorkspace(stored.ID, sessionCwd(stored, c.s.opts.Cwd)))
}

// openIn returns the acpSession of a stored session, opening it with
// workspace ws when it is not open on this connection.
func (c *conn) openIn(stored session.Session, ws *workspace.Workspace) *acpSession {
	mode := stored.AgentName
	if _, ok := c.s.pool.Node(mode); !ok {
		mode = c.s.opts.Agent
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if s := c.sessions[stored.ID]; s != nil {
		return s
	}
	s := &acpSession{id: stored.ID, ws: ws, mode: mode, modelOf: storedModelOf(c, stored, mode)}
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

func (c *conn) newSession(params json.RawMessage) (any, *rpcError) {
	var p newSessionParams
	if err := decodeParams(params, &p); err != nil {
		return nil, err
	}
	if p.Cwd == nil {
		return nil, invalidParams("cwd is required")
	}
	sid := id.Descending(id.Session)
	ws := c.sessionWorkspace(sid, *p.Cwd)
	mgr, rerr := c.newSessionMCP(p.MCPServers, c.workspaceRoot(ws))
	if rerr != nil {
		return nil, rerr
	}
	mode := c.s.opts.Agent
	node, _ := c.s.pool.Node(mode)
	now := time.Now()
	stored := session.Session{
		ID: sid, AgentName: mode, SourceType: node.SourceType(),
		Status: session.StatusIdle, CreatedAt: now, UpdatedAt: now,
		Metadata: map[string]any{"cwd": *p.Cwd, "client": "acp"},
	}
	if err := c.s.pool.Store().CreateSession(c.ctx, stored); err != nil {
		c.closeMCP(mgr)
		return nil, errorf(codeInternalError, "Internal error: create session: %v", err)
	}
	s := &acpSession{id: stored.ID, ws: ws, mcp: mgr, mode: mode}
	c.addSession(s)
	c.log.Info("acp: session created", "session", s.id, "mode", mode, "workspace", c.workspaceRoot(ws), "mcp_servers", len(p.MCPServers))
	return newSessionResult{s.id, c.modes(mode), sessionModels(c, mode, "")}, nil
}

// newSessionResult is session/new's result.
type newSessionResult struct {
	SessionID string      `json:"sessionId"`
	Modes     *modeState  `json:"modes"`
	Models    *modelState `json:"models,omitempty"`
}

// loadSession answers session/load; the reply goes to the returned owner's
// queue, after the replayed history; then, when set, is called once the
// reply is queued.
func (c *conn) loadSession(params json.RawMessage) (result any, owner string, then func(), rerr *rpcError) {
	var p newSessionParams
	if err := decodeParams(params, &p); err != nil {
		return nil, "", nil, err
	}
	if p.SessionID == "" {
		return nil, "", nil, invalidParams("sessionId is required")
	}
	if p.Cwd == nil {
		return nil, "", nil, invalidParams("cwd is required")
	}
	stored, err := c.s.pool.Store().GetSession(c.ctx, p.SessionID)
	if err != nil {
		if errors.Is(err, session.ErrNotFound) {
			return nil, "", nil, sessionNotFound(p.SessionID)
		}
		return nil, "", nil, errorf(codeInternalError, "Internal error: %v", err)
	}
	ws := c.sessionWorkspace(stored.ID, *p.Cwd)
	mgr, rerr := c.newSessionMCP(p.MCPServers, c.workspaceRoot(ws))
	if rerr != nil {
		return nil, "", nil, rerr
	}
	s := c.openIn(stored, ws)
	s.mu.Lock()
	busy := s.run != nil
	mode, modelOf := s.mode, s.modelOf
	s.mu.Unlock()
	if busy {
		c.closeMCP(mgr)
		return nil, "", nil, errorf(codeInternalError, "Internal error: session %s has a prompt in progress", s.id)
	}
	c.setTools(s, ws, mgr)
	// A root whose run stopped (its process died) while a call of its tree
	// waited for an answer goes on here once the load is answered.
	openRun, err := c.s.pool.WaitingRun(c.ctx, s.id)
	if err != nil {
		c.log.Warn("acp: find whether the session's run waits for an answer", "session", s.id, "err", err)
	}
	// A root that runs on the engine is followed from its open run, so
	// that what its tree asks reaches the editor.
	var er *engineRun
	if openRun == "" {
		if er, err = c.openEngineRun(c.ctx, stored); err != nil {
			c.log.Warn("acp: find the session's run on the engine", "session", s.id, "err", err)
		} else if er != nil {
			openRun = er.runID
		}
	}
	if err := c.replay(s.id, openRun); err != nil {
		return nil, s.id, nil, errorf(codeInternalError, "Internal error: replay: %v", err)
	}
	c.log.Info("acp: session loaded", "session", s.id, "mode", mode)
	switch {
	case er != nil:
		then = func() { c.followRun(s, er) }
	case openRun != "":
		then = func() { c.continueRun(s, openRun) }
	}
	return struct {
		Modes  *modeState  `json:"modes"`
		Models *modelState `json:"models,omitempty"`
	}{c.modes(mode), sessionModels(c, mode, modelOf)}, s.id, then, nil
}

type sessionInfo struct {
	SessionID string         `json:"sessionId"`
	Cwd       string         `json:"cwd"`
	Title     string         `json:"title,omitempty"`
	UpdatedAt string         `json:"updatedAt,omitempty"`
	Meta      map[string]any `json:"_meta,omitempty"`
}

const listPageSize = 100

func (c *conn) listSessions(params json.RawMessage) (any, *rpcError) {
	var p struct {
		Cwd    *string `json:"cwd"`
		Cursor *string `json:"cursor"`
	}
	if err := decodeParams(params, &p); err != nil {
		return nil, err
	}
	all, err := c.s.pool.Store().ListSessions(c.ctx, session.ListOptions{RootsOnly: true})
	if err != nil {
		return nil, errorf(codeInternalError, "Internal error: %v", err)
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

func (c *conn) setMode(params json.RawMessage) (any, *rpcError) {
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
	// A new mode runs on its own model: a model chosen for the old
	// mode's agent is dropped (session/set_model again to keep it).
	s.mu.Lock()
	s.mode, s.modelOf = p.ModeID, ""
	s.mu.Unlock()
	if err := c.s.pool.Store().UpdateSession(c.ctx, s.id, func(st *session.Session) {
		st.AgentName = p.ModeID
		delete(st.Metadata, metaModelOf)
	}); err != nil {
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
		// A child of one of the connection's sessions is cancelled alone.
		if err := c.cancelChild(p.SessionID); err != nil {
			c.log.Debug("acp: session/cancel of no running session", "session", p.SessionID, "err", err.Message)
		}
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

// closeSession answers session/close: the prompt in progress is
// cancelled, the session's MCP servers are stopped and it is forgotten by
// the connection (it stays in the store; a later session/load or prompt
// opens it again).
func (c *conn) closeSession(params json.RawMessage) (any, *rpcError) {
	var p struct {
		SessionID string `json:"sessionId"`
	}
	if err := decodeParams(params, &p); err != nil {
		return nil, err
	}
	if p.SessionID == "" {
		return nil, invalidParams("sessionId is required")
	}
	c.mu.Lock()
	s := c.sessions[p.SessionID]
	if s != nil {
		delete(c.sessions, s.id)
		delete(c.owners, s.id)
	}
	c.mu.Unlock()
	if s == nil {
		if _, err := c.s.pool.Store().GetSession(c.ctx, p.SessionID); err != nil {
			return nil, sessionNotFound(p.SessionID)
		}
		return struct{}{}, nil // not open here: nothing to free
	}
	s.mu.Lock()
	run, mgr := s.run, s.mcp
	s.mcp = nil
	s.mu.Unlock()
	if run != nil {
		run.cancelled.Store(true)
		run.cancel()
	}
	c.closeMCP(mgr)
	// Its hooks' SessionEnd (after the cancelled prompt's run, if any).
	c.s.endSession(s.id, hook.CauseClosed)
	c.log.Info("acp: session closed", "session", s.id)
	return struct{}{}, nil
}

// workspaceRoot is the directory of a session's workspace: ws, else the
// pool's.
func (c *conn) workspaceRoot(ws *workspace.Workspace) string {
	if ws == nil {
		ws = c.s.pool.Workspace()
	}
	if ws == nil {
		return ""
	}
	return ws.Root()
}
