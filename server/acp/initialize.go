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
	var caps clientCaps
	if cc := p.ClientCapabilities; cc != nil {
		raw := bytes.TrimSpace(cc.Subagents)
		subagents = len(raw) > 0 && raw[0] == '{'
		caps = parseClientCaps(cc.FS, cc.Terminal)
	}
	c.mu.Lock()
	c.subagents = subagents
	c.caps = caps
	c.mu.Unlock()
	client := ""
	if p.ClientInfo != nil {
		client = p.ClientInfo.Name + " " + p.ClientInfo.Version
	}
	c.log.Info("acp: initialize", "client", strings.TrimSpace(client), "protocol_version", p.ProtocolVersion.String(), "subagents", subagents,
		"fs_read", caps.read, "fs_write", caps.write, "terminal", caps.terminal)

	res := initializeResult{
		ProtocolVersion: ProtocolVersion,
		AuthMethods:     []any{},
		AgentInfo:       implementation{Name: c.s.opts.Name, Title: "AgentPool", Version: c.s.opts.Version},
		Meta:            map[string]any{"agentpool": map[string]any{"subagents": true, "spawn_tool_call_prefix": spawnToolCallPrefix}},
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
