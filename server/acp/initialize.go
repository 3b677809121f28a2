// The initialize and authenticate requests.

package acp

import (
	"bytes"
	"encoding/json"
	"strings"
)

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
		List  struct{} `json:"list"`
		Close struct{} `json:"close"`
	} `json:"sessionCapabilities"`
}

func (c *conn) initialize(params json.RawMessage) (any, *rpcError) {
	var p struct {
		ProtocolVersion    *json.Number `json:"protocolVersion"`
		ClientCapabilities *struct {
			Subagents json.RawMessage `json:"subagents"`
			FS        json.RawMessage `json:"fs"`
			Terminal  json.RawMessage `json:"terminal"`
			Meta      struct {
				Agentpool json.RawMessage `json:"agentpool"`
			} `json:"_meta"`
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
	view := viewFlat
	var caps clientCaps
	if cc := p.ClientCapabilities; cc != nil {
		switch {
		case isObject(cc.Subagents):
			view = viewSubagents
		case spawnToolCalls(cc.Meta.Agentpool):
			view = viewTree
		}
		caps = parseClientCaps(cc.FS, cc.Terminal)
	}
	subagents := view == viewSubagents
	c.mu.Lock()
	c.view = view
	c.caps = caps
	c.mu.Unlock()
	client := ""
	if p.ClientInfo != nil {
		client = p.ClientInfo.Name + " " + p.ClientInfo.Version
	}
	c.log.Info("acp: initialize", "client", strings.TrimSpace(client), "protocol_version", p.ProtocolVersion.String(), "subagents", subagents,
		"spawn_tool_calls", view != viewFlat,
		"fs_read", caps.read, "fs_write", caps.write, "terminal", caps.terminal)

	res := initializeResult{
		ProtocolVersion: ProtocolVersion,
		AuthMethods:     []any{},
		AgentInfo:       implementation{Name: c.s.opts.Name, Title: "AgentPool", Version: c.s.opts.Version},
		Meta:            map[string]any{"agentpool": map[string]any{"subagents": true, "spawn_tool_calls": true, "spawn_tool_call_prefix": spawnToolCallPrefix}},
	}
	res.AgentCapabilities.LoadSession = true
	res.AgentCapabilities.PromptCapabilities.EmbeddedContext = true
	res.AgentCapabilities.MCPCapabilities.HTTP = true
	res.AgentCapabilities.MCPCapabilities.SSE = true
	return res, nil
}

func (c *conn) authenticate(params json.RawMessage) (any, *rpcError) {
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

// spawnView is how a connection's client is shown the children of a run.
type spawnView uint8

const (
	// viewFlat: a client that announced neither extension sees one tool
	// call per delegation, the delegating tool call of the root session,
	// with the child's progress (and its descendants', nested) as its
	// content; children that no root tool call started get a spawn tool
	// call of their own.
	viewFlat spawnView = iota
	// viewTree: the client announced clientCapabilities._meta.agentpool
	// {spawn_tool_calls: true}: every child, at any depth, is a spawn tool
	// call "spawn:<child>" of the root session, besides the delegating
	// tool calls.
	viewTree
	// viewSubagents: the client announced clientCapabilities.subagents
	// (the SDK's unstable entry): the tree, plus subagent_update and the
	// children's own session updates.
	viewSubagents
)

// isObject reports whether raw is a JSON object.
func isObject(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && raw[0] == '{'
}

// spawnToolCalls reports whether the client's _meta.agentpool capability
// asks for the spawn tool calls: {"spawn_tool_calls": true}.
func spawnToolCalls(raw json.RawMessage) bool {
	if !isObject(raw) {
		return false
	}
	var ext struct {
		SpawnToolCalls bool `json:"spawn_tool_calls"`
	}
	return json.Unmarshal(raw, &ext) == nil && ext.SpawnToolCalls
}
